// Symbol visibility: the library is built with hidden visibility; MANTISSA_API marks the API.
#pragma once

#if defined(_WIN32)
#define MANTISSA_API
#else
#define MANTISSA_API __attribute__((visibility("default")))
#endif
