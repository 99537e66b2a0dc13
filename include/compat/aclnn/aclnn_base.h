/* aclnn base declarations (kept for programs that include this header by name). */
#ifndef MANTISSA_COMPAT_ACLNN_ACLNN_BASE_H_
#define MANTISSA_COMPAT_ACLNN_ACLNN_BASE_H_

#include "acl/acl_rt.h"
#include "aclnn/acl_meta.h"

#endif /* MANTISSA_COMPAT_ACLNN_ACLNN_BASE_H_ */
