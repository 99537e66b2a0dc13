/* A C program on the installed aclnn API: one AmpUpdateScale step with growth, in place. */
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_amp_update_scale.h"

static aclTensor* scalar_tensor(aclDataType dtype, void* data) {
  const int64_t dims[1] = {1};
  const int64_t strides[1] = {1};
  return aclCreateTensor(dims, 1, dtype, strides, 0, ACL_FORMAT_ND, dims, 1, data);
}

int main(void) {
  if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  aclrtStream stream = NULL;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;

  void* scale = NULL;
  void* tracker = NULL;
  void* found = NULL;
  if (aclrtMalloc(&scale, sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&tracker, sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&found, sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  const float scale_host = 1024.0f, found_host = 0.0f;
  const int32_t tracker_host = 4;
  aclrtMemcpy(scale, sizeof(float), &scale_host, sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE);
  aclrtMemcpy(tracker, sizeof(int32_t), &tracker_host, sizeof(int32_t), ACL_MEMCPY_HOST_TO_DEVICE);
  aclrtMemcpy(found, sizeof(float), &found_host, sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE);

  aclTensor* t_scale = scalar_tensor(ACL_FLOAT, scale);
  aclTensor* t_tracker = scalar_tensor(ACL_INT32, tracker);
  aclTensor* t_found = scalar_tensor(ACL_FLOAT, found);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = NULL;
  aclnnStatus status = aclnnAmpUpdateScaleGetWorkspaceSize(
      t_scale, t_tracker, t_found, 2.0, 0.5, 5, t_scale, t_tracker, &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    printf("phase one failed: %d %s\n", status, aclGetRecentErrMsg());
    return 1;
  }
  status = aclnnAmpUpdateScale(NULL, workspace_size, executor, stream);
  if (status != ACLNN_SUCCESS || aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
    printf("phase two failed: %d %s\n", status, aclGetRecentErrMsg());
    return 1;
  }
  /* A second run of the spent one-shot executor is refused. */
  if (aclnnAmpUpdateScale(NULL, 0, executor, stream) != ACLNN_ERR_PARAM_INVALID) return 1;

  /* From C any int is an aclDataType: an unknown value makes a tensor that operators reject. */
  aclTensor* t_odd = scalar_tensor((aclDataType)99, found);
  if (t_odd == NULL) return 1;
  executor = NULL;
  if (aclnnAmpUpdateScaleGetWorkspaceSize(t_odd, t_tracker, t_odd, 2.0, 0.5, 5, t_odd, t_tracker,
                                          &workspace_size, &executor) != ACLNN_ERR_PARAM_INVALID ||
      executor != NULL) {
    return 1;
  }
  aclDestroyTensor(t_odd);

  /* Scalars, arrays and lists from C. A list owns its elements: destroying it destroys them. */
  {
    float lr_host = 0.5f;
    const int64_t dims[2] = {2, 3};
    const bool flags[2] = {true, false};
    aclTensor* item = scalar_tensor(ACL_FLOAT, found);
    const aclTensor* items[1];
    const aclScalar* scalars[1];
    aclScalar* lr = aclCreateScalar(&lr_host, ACL_FLOAT);
    aclIntArray* shape = aclCreateIntArray(dims, 2);
    aclBoolArray* mask = aclCreateBoolArray(flags, 2);
    aclTensorList* list = NULL;
    aclScalarList* scalar_list = NULL;
    uint64_t n = 0, total = 0;
    items[0] = item;
    scalars[0] = lr;
    list = aclCreateTensorList(items, 1);
    scalar_list = aclCreateScalarList(scalars, 1);
    if (list == NULL || scalar_list == NULL || shape == NULL || mask == NULL) return 1;
    if (aclGetTensorListSize(list, &n) != ACLNN_SUCCESS) return 1;
    total += n;
    if (aclGetScalarListSize(scalar_list, &n) != ACLNN_SUCCESS) return 1;
    total += n;
    if (aclGetIntArraySize(shape, &n) != ACLNN_SUCCESS) return 1;
    total += n;
    if (aclGetBoolArraySize(mask, &n) != ACLNN_SUCCESS) return 1;
    total += n;
    if (total != 6) return 1;
    if (aclDestroyTensorList(list) != ACLNN_SUCCESS || aclDestroyScalarList(scalar_list) != 0 ||
        aclDestroyIntArray(shape) != 0 || aclDestroyBoolArray(mask) != 0) {
      return 1;
    }
    /* The list destroyed its tensor: destroying it again is refused. */
    if (aclDestroyTensor(item) != ACLNN_ERR_PARAM_INVALID) return 1;
  }

  float scale_out = 0.0f;
  int32_t tracker_out = -1;
  aclrtMemcpy(&scale_out, sizeof(float), scale, sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(&tracker_out, sizeof(int32_t), tracker, sizeof(int32_t), ACL_MEMCPY_DEVICE_TO_HOST);
  printf("consumer_aclnn: scale %.1f tracker %d\n", scale_out, tracker_out);

  aclDestroyTensor(t_scale);
  aclDestroyTensor(t_tracker);
  aclDestroyTensor(t_found);
  aclrtFree(scale);
  aclrtFree(tracker);
  aclrtFree(found);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return (scale_out == 2048.0f && tracker_out == 0) ? 0 : 1;
}
