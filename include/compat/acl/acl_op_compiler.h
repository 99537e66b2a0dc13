/* Op-by-name execution (graph-mode single operators): aclopCompileAndExecuteV2. */
#ifndef MANTISSA_COMPAT_ACL_ACL_OP_COMPILER_H_
#define MANTISSA_COMPAT_ACL_ACL_OP_COMPILER_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclEngineType {
  ACL_ENGINE_SYS = 0,
  ACL_ENGINE_AICORE = 1,
  ACL_ENGINE_VECTOR = 2
} aclopEngineType;

typedef enum aclCompileType { ACL_COMPILE_SYS = 0, ACL_COMPILE_UNREGISTERED = 1 } aclopCompileType;

/* Runs operator `opType` ("AmpUpdateScale", "SGD", "ApplyAdamD") on the given descriptors and
 * buffers. Returns an aclnn status code: 161001 for a null op type, descriptor or buffer; 561003
 * for an unknown op type; 161002 for wrong counts, attributes, short buffers and every operator
 * validation rule (or the operator's own code where its contract gives one). */
ACL_FUNC_VISIBILITY aclError
aclopCompileAndExecuteV2(const char* opType, int numInputs, aclTensorDesc* inputDesc[],
                         aclDataBuffer* inputs[], int numOutputs, aclTensorDesc* outputDesc[],
                         aclDataBuffer* outputs[], aclopAttr* attr, aclopEngineType engineType,
                         aclopCompileType compileType, const char* opPath, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACL_ACL_OP_COMPILER_H_ */
