/* The CANN-compatible C API, host implementation by libmantissa: the umbrella header. */
#ifndef MANTISSA_COMPAT_ACL_ACL_H_
#define MANTISSA_COMPAT_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_op.h"
#include "acl/acl_op_compiler.h"
#include "acl/acl_rt.h"

#endif /* MANTISSA_COMPAT_ACL_ACL_H_ */
