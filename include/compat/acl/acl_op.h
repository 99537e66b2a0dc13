/* Operator-level declarations of the CANN-compatible C API (descriptors, buffers, attributes
 * live in acl_base.h). */
#ifndef MANTISSA_COMPAT_ACL_ACL_OP_H_
#define MANTISSA_COMPAT_ACL_ACL_OP_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif /* MANTISSA_COMPAT_ACL_ACL_OP_H_ */
