/* Base types of the CANN-compatible C API: errors, data types, formats, tensor descriptors,
 * data buffers and operator attributes. Values are CANN's, so programs written for Ascend NPUs
 * compile unchanged. Implemented on the host CPU by libmantissa. */
#ifndef MANTISSA_COMPAT_ACL_ACL_BASE_H_
#define MANTISSA_COMPAT_ACL_ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define ACL_FUNC_VISIBILITY
#else
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef uint16_t aclFloat16;

static const int ACL_SUCCESS = 0;
/* Parameter errors (CANN's values). */
static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_INVALID_RESOURCE_HANDLE = 100006;
static const int ACL_ERROR_OP_NOT_FOUND = 100024;
/* Resource errors. */
static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002;
/* Internal errors. */
static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;

typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT16 = 6,
  ACL_UINT16 = 7,
  ACL_UINT32 = 8,
  ACL_INT64 = 9,
  ACL_UINT64 = 10,
  ACL_DOUBLE = 11,
  ACL_BOOL = 12,
  ACL_STRING = 13,
  ACL_COMPLEX64 = 16,
  ACL_COMPLEX128 = 17,
  ACL_BF16 = 27,
  ACL_INT4 = 29,     /* packed two per byte, element 2i in the low nibble */
  ACL_HIFLOAT8 = 34, /* declared; no operator of this library accepts it */
  ACL_FLOAT8_E5M2 = 35,
  ACL_FLOAT8_E4M3FN = 36,
  ACL_FLOAT8_E8M0 = 37,
  ACL_FLOAT6_E3M2 = 38, /* one per byte, low six bits */
  ACL_FLOAT6_E2M3 = 39,
  ACL_FLOAT4_E2M1 = 40, /* packed two per byte, element 2i in the low nibble */
  ACL_FLOAT4_E1M2 = 41  /* packed as FLOAT4_E2M1 */
} aclDataType;

/* CANN's formats; the operators of this library take ACL_FORMAT_ND only (any other is refused
 * with 161002 when an operator runs). */
typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_NCHW = 0,
  ACL_FORMAT_NHWC = 1,
  ACL_FORMAT_ND = 2,
  ACL_FORMAT_NC1HWC0 = 3,
  ACL_FORMAT_FRACTAL_Z = 4,
  ACL_FORMAT_NC1HWC0_C04 = 12,
  ACL_FORMAT_HWCN = 16,
  ACL_FORMAT_NDHWC = 27,
  ACL_FORMAT_FRACTAL_NZ = 29,
  ACL_FORMAT_NCDHW = 30,
  ACL_FORMAT_NDC1HWC0 = 32,
  ACL_FRACTAL_Z_3D = 33,
  ACL_FORMAT_NC = 35,
  ACL_FORMAT_NCL = 47
} aclFormat;

/* Opaque handles of op-by-name execution. */
typedef struct aclTensorDesc aclTensorDesc;
typedef struct aclDataBuffer aclDataBuffer;
typedef struct aclopAttr aclopAttr;

/* A tensor descriptor: dtype, dims and format. numDims 0 describes a scalar (one element).
 * Returns NULL on bad arguments (negative numDims or dims, NULL dims with numDims > 0). */
ACL_FUNC_VISIBILITY aclTensorDesc* aclCreateTensorDesc(aclDataType dataType, int numDims,
                                                       const int64_t* dims, aclFormat format);
ACL_FUNC_VISIBILITY void aclDestroyTensorDesc(const aclTensorDesc* desc);

/* A data buffer: a pointer and its size in bytes (not owned). */
ACL_FUNC_VISIBILITY aclDataBuffer* aclCreateDataBuffer(void* data, size_t size);
ACL_FUNC_VISIBILITY aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer);
ACL_FUNC_VISIBILITY void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer);
ACL_FUNC_VISIBILITY size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer);

/* Operator attributes by name. */
ACL_FUNC_VISIBILITY aclopAttr* aclopCreateAttr(void);
ACL_FUNC_VISIBILITY void aclopDestroyAttr(const aclopAttr* attr);
ACL_FUNC_VISIBILITY aclError aclopSetAttrBool(aclopAttr* attr, const char* attrName,
                                              uint8_t attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrInt(aclopAttr* attr, const char* attrName,
                                             int64_t attrValue);
ACL_FUNC_VISIBILITY aclError aclopSetAttrFloat(aclopAttr* attr, const char* attrName,
                                               float attrValue);
/* A list of ints (CANN's ListInt attribute, e.g. SoftmaxV2's "axes"). */
ACL_FUNC_VISIBILITY aclError aclopSetAttrListInt(aclopAttr* attr, const char* attrName,
                                                 int numValues, const int64_t* values);
/* A string (CANN's String attribute, e.g. Quantize's "dtype", AscendQuantV2's "round_mode"). */
ACL_FUNC_VISIBILITY aclError aclopSetAttrString(aclopAttr* attr, const char* attrName,
                                                const char* attrValue);
/* A list of bools (CANN's ListBool attribute, e.g. LayerNormGradV3's "output_mask"). */
ACL_FUNC_VISIBILITY aclError aclopSetAttrListBool(aclopAttr* attr, const char* attrName,
                                                  int numValues, const uint8_t* values);

/* The last failure's reason on the calling thread (operator, argument, values); "" if none. */
ACL_FUNC_VISIBILITY const char* aclGetRecentErrMsg(void);

/* fp32 <-> fp16 bit patterns (round to nearest even; NaN stays NaN), as CANN's samples use them
 * to fill FLOAT16 tensors. */
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);

#ifdef __cplusplus
}
#endif

#endif /* MANTISSA_COMPAT_ACL_ACL_BASE_H_ */
