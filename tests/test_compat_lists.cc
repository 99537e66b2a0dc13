// aclTensorList, aclScalar, aclIntArray, aclBoolArray and aclScalarList through the C API:
// creation, copies, ownership, stale and foreign handles, size accessors, and the internals
// operators read them through.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "compat/handle_registry.h"
#include "compat/list_internal.h"
#include "compat/tensor_internal.h"
#include "mantissa/dtype.h"
#include "mantissa/tensor.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::compat::bool_array_is_live;
using mantissa::compat::int_array_is_live;
using mantissa::compat::scalar_is_live;
using mantissa::compat::scalar_list_is_live;
using mantissa::compat::tensor_is_live;
using mantissa::compat::tensor_list_is_live;

std::string recent() { return aclGetRecentErrMsg(); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A contiguous tensor over `data` with `dims`.
aclTensor* make_tensor(std::vector<int64_t> dims, aclDataType dtype, void* data,
                       aclFormat format = ACL_FORMAT_ND) {
  return aclCreateTensor(dims.data(), dims.size(), dtype, nullptr, 0, format, dims.data(),
                         dims.size(), data);
}

// A pointer to memory that no registry ever handed out.
template <class T>
T* foreign() {
  static int64_t storage[8] = {};
  return reinterpret_cast<T*>(storage);
}

// --- aclTensorList -----------------------------------------------------------------------------

TEST(CompatLists, TensorListHoldsMixedTensorsAndOwnsThem) {
  float a[6] = {};
  uint16_t b[4] = {};
  aclTensor* ta = make_tensor({2, 3}, ACL_FLOAT, a);
  aclTensor* tb = make_tensor({4}, ACL_BF16, b);
  ASSERT_NE(ta, nullptr);
  ASSERT_NE(tb, nullptr);
  const aclTensor* elements[] = {ta, tb};
  aclTensorList* list = aclCreateTensorList(elements, 2);
  ASSERT_NE(list, nullptr);
  EXPECT_TRUE(tensor_list_is_live(list));
  uint64_t size = 0;
  EXPECT_EQ(aclGetTensorListSize(list, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 2u);

  EXPECT_FALSE(mantissa::compat::first_dead_element(*list).has_value());
  EXPECT_EQ(mantissa::compat::check_tensor_list_arg("aclnnTest", "tensors", list), ACLNN_SUCCESS);
  const std::vector<mantissa::TensorView> views = mantissa::compat::to_views(*list);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].data, a);
  EXPECT_EQ(views[0].dtype, DType::kFloat32);
  EXPECT_EQ(views[0].shape_string(), "[2, 3]");
  EXPECT_EQ(views[1].data, b);
  EXPECT_EQ(views[1].dtype, DType::kBFloat16);
  EXPECT_EQ(views[1].shape_string(), "[4]");
  const mantissa::TensorList as_list = views;  // the C++ API's list type is a span of views
  EXPECT_EQ(as_list.size(), 2u);

  // The list destroys its tensors; destroying one again is refused without a crash.
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_FALSE(tensor_list_is_live(list));
  EXPECT_FALSE(tensor_is_live(ta));
  EXPECT_FALSE(tensor_is_live(tb));
  EXPECT_EQ(aclDestroyTensor(ta), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclDestroyTensor"));
}

TEST(CompatLists, EmptyListsAndArrays) {
  for (const bool null_value : {true, false}) {
    const aclTensor* no_tensor = nullptr;
    const aclScalar* no_scalar = nullptr;
    const int64_t no_int = 0;
    const bool no_bool = false;
    aclTensorList* tl = aclCreateTensorList(null_value ? nullptr : &no_tensor, 0);
    aclScalarList* sl = aclCreateScalarList(null_value ? nullptr : &no_scalar, 0);
    aclIntArray* ia = aclCreateIntArray(null_value ? nullptr : &no_int, 0);
    aclBoolArray* ba = aclCreateBoolArray(null_value ? nullptr : &no_bool, 0);
    ASSERT_NE(tl, nullptr);
    ASSERT_NE(sl, nullptr);
    ASSERT_NE(ia, nullptr);
    ASSERT_NE(ba, nullptr);
    uint64_t size = 99;
    EXPECT_EQ(aclGetTensorListSize(tl, &size), ACLNN_SUCCESS);
    EXPECT_EQ(size, 0u);
    size = 99;
    EXPECT_EQ(aclGetScalarListSize(sl, &size), ACLNN_SUCCESS);
    EXPECT_EQ(size, 0u);
    size = 99;
    EXPECT_EQ(aclGetIntArraySize(ia, &size), ACLNN_SUCCESS);
    EXPECT_EQ(size, 0u);
    size = 99;
    EXPECT_EQ(aclGetBoolArraySize(ba, &size), ACLNN_SUCCESS);
    EXPECT_EQ(size, 0u);
    EXPECT_TRUE(mantissa::compat::to_views(*tl).empty());
    EXPECT_TRUE(mantissa::compat::int_array_values(*ia).empty());
    EXPECT_TRUE(mantissa::compat::bool_array_values(*ba).empty());
    EXPECT_EQ(aclDestroyTensorList(tl), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalarList(sl), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  }
}

TEST(CompatLists, NullValueWithElementsIsRefused) {
  EXPECT_EQ(aclCreateTensorList(nullptr, 3), nullptr);
  EXPECT_EQ(recent(), "aclCreateTensorList: value is null but size is 3");
  EXPECT_EQ(aclCreateScalarList(nullptr, 2), nullptr);
  EXPECT_EQ(recent(), "aclCreateScalarList: value is null but size is 2");
  EXPECT_EQ(aclCreateIntArray(nullptr, 1), nullptr);
  EXPECT_EQ(recent(), "aclCreateIntArray: value is null but size is 1");
  EXPECT_EQ(aclCreateBoolArray(nullptr, 4), nullptr);
  EXPECT_EQ(recent(), "aclCreateBoolArray: value is null but size is 4");
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_EQ(recent(), "aclCreateScalar: value is null");
}

TEST(CompatLists, AbsurdSizesAreRefusedBeforeAllocating) {
  const int64_t one = 1;
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(aclCreateIntArray(&one, huge), nullptr);
  EXPECT_TRUE(contains(recent(), "aclCreateIntArray: size 18446744073709551615 is too large"));
  const bool yes = true;
  EXPECT_EQ(aclCreateBoolArray(&yes, huge), nullptr);
  EXPECT_TRUE(contains(recent(), "aclCreateBoolArray: size"));
}

TEST(CompatLists, TensorListRefusesNullDeadAndForeignElements) {
  float data[2] = {};
  aclTensor* t = make_tensor({2}, ACL_FLOAT, data);
  ASSERT_NE(t, nullptr);

  const aclTensor* with_null[] = {t, nullptr};
  EXPECT_EQ(aclCreateTensorList(with_null, 2), nullptr);
  EXPECT_EQ(recent(), "aclCreateTensorList: value[1] is null");
  // A refused list takes nothing: the caller still owns t.
  EXPECT_TRUE(tensor_is_live(t));

  const aclTensor* with_foreign[] = {t, foreign<aclTensor>()};
  EXPECT_EQ(aclCreateTensorList(with_foreign, 2), nullptr);
  EXPECT_TRUE(contains(recent(), "aclCreateTensorList: value[1] ("));
  EXPECT_TRUE(contains(recent(), "is not a live aclTensor"));
  EXPECT_TRUE(tensor_is_live(t));

  ASSERT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  const aclTensor* with_dead[] = {t};
  EXPECT_EQ(aclCreateTensorList(with_dead, 1), nullptr);
  EXPECT_TRUE(contains(recent(), "value[0]"));
}

TEST(CompatLists, DestroyTwiceAndForeignHandlesAreRefused) {
  float f = 1.0f;
  const int64_t ints[2] = {1, 2};
  const bool bools[2] = {true, false};
  aclScalar* s = aclCreateScalar(&f, ACL_FLOAT);
  aclIntArray* ia = aclCreateIntArray(ints, 2);
  aclBoolArray* ba = aclCreateBoolArray(bools, 2);
  aclTensorList* tl = aclCreateTensorList(nullptr, 0);
  aclScalarList* sl = aclCreateScalarList(nullptr, 0);
  ASSERT_TRUE(s && ia && ba && tl && sl);

  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclDestroyScalar: "));
  EXPECT_TRUE(contains(recent(), "is not a live aclScalar"));
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "is not a live aclIntArray"));
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "is not a live aclBoolArray"));
  EXPECT_EQ(aclDestroyTensorList(tl), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(tl), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "is not a live aclTensorList"));
  EXPECT_EQ(aclDestroyScalarList(sl), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalarList(sl), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "is not a live aclScalarList"));

  EXPECT_EQ(aclDestroyScalar(foreign<aclScalar>()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyIntArray(foreign<aclIntArray>()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyBoolArray(foreign<aclBoolArray>()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensorList(foreign<aclTensorList>()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyScalarList(foreign<aclScalarList>()), ACLNN_ERR_PARAM_INVALID);

  // NULL is a no-op, as for aclDestroyTensor.
  EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalarList(nullptr), ACLNN_SUCCESS);
}

TEST(CompatLists, AHandleOfAnotherKindIsForeign) {
  float data[1] = {};
  aclTensor* t = make_tensor({1}, ACL_FLOAT, data);
  const int64_t ints[1] = {5};
  aclIntArray* ia = aclCreateIntArray(ints, 1);
  ASSERT_TRUE(t && ia);
  EXPECT_EQ(aclDestroyTensorList(reinterpret_cast<aclTensorList*>(t)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyBoolArray(reinterpret_cast<aclBoolArray*>(ia)), ACLNN_ERR_PARAM_INVALID);
  uint64_t size = 0;
  EXPECT_EQ(aclGetScalarListSize(reinterpret_cast<aclScalarList*>(ia), &size),
            ACLNN_ERR_PARAM_INVALID);
  const aclScalar* not_scalars[] = {reinterpret_cast<const aclScalar*>(t)};
  EXPECT_EQ(aclCreateScalarList(not_scalars, 1), nullptr);
  EXPECT_TRUE(contains(recent(), "is not a live aclScalar"));
  // Both are untouched.
  EXPECT_TRUE(tensor_is_live(t));
  EXPECT_TRUE(int_array_is_live(ia));
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
}

TEST(CompatLists, SizeAccessorsCheckTheirArguments) {
  uint64_t size = 7;
  EXPECT_EQ(aclGetTensorListSize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclGetTensorListSize: tensorList is null");
  EXPECT_EQ(aclGetScalarListSize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclGetScalarListSize: scalarList is null");
  EXPECT_EQ(aclGetIntArraySize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclGetIntArraySize: array is null");
  EXPECT_EQ(aclGetBoolArraySize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclGetBoolArraySize: array is null");
  EXPECT_EQ(size, 7u);

  const int64_t ints[3] = {1, 2, 3};
  aclIntArray* ia = aclCreateIntArray(ints, 3);
  ASSERT_NE(ia, nullptr);
  EXPECT_EQ(aclGetIntArraySize(ia, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclGetIntArraySize: size is null");
  EXPECT_EQ(aclGetIntArraySize(ia, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  ASSERT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclGetIntArraySize(ia, &size), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclGetIntArraySize: array ("));
  EXPECT_EQ(aclGetTensorListSize(foreign<aclTensorList>(), &size), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetBoolArraySize(foreign<aclBoolArray>(), &size), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(size, 3u);
}

// --- Ownership corner cases ----------------------------------------------------------------------

TEST(CompatLists, ATensorDestroyedBeforeItsListIsReportedNotDereferenced) {
  float a[1] = {}, b[1] = {};
  aclTensor* ta = make_tensor({1}, ACL_FLOAT, a);
  aclTensor* tb = make_tensor({1}, ACL_FLOAT, b);
  const aclTensor* elements[] = {ta, tb};
  aclTensorList* list = aclCreateTensorList(elements, 2);
  ASSERT_NE(list, nullptr);

  // The caller's error: destroying a tensor the list owns. The list notices it.
  ASSERT_EQ(aclDestroyTensor(ta), ACLNN_SUCCESS);
  EXPECT_EQ(mantissa::compat::first_dead_element(*list), 0u);
  EXPECT_EQ(mantissa::compat::check_tensor_list_arg("aclnnTest", "tensors", list),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclnnTest: tensors[0] ("));
  EXPECT_TRUE(contains(recent(), "is no longer a live aclTensor"));

  // A tensor made now may take ta's address; the list must neither read nor destroy it.
  float c[1] = {};
  aclTensor* tc = make_tensor({1}, ACL_FLOAT, c);
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(mantissa::compat::first_dead_element(*list), 0u);

  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclDestroyTensorList: element 0 ("));
  EXPECT_TRUE(contains(recent(), "was already destroyed"));
  // The list and its other tensor are freed all the same; the newer tensor is untouched.
  EXPECT_FALSE(tensor_list_is_live(list));
  EXPECT_FALSE(tensor_is_live(tb));
  EXPECT_TRUE(tensor_is_live(tc));
  EXPECT_EQ(aclDestroyTensor(tc), ACLNN_SUCCESS);
}

TEST(CompatLists, ATensorListedTwiceIsDestroyedOnce) {
  float a[1] = {};
  aclTensor* t = make_tensor({1}, ACL_FLOAT, a);
  const aclTensor* elements[] = {t, t, t};
  aclTensorList* list = aclCreateTensorList(elements, 3);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(mantissa::compat::to_views(*list).size(), 3u);
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_FALSE(tensor_is_live(t));
}

TEST(CompatLists, ATensorInTwoListsIsDestroyedByTheFirst) {
  float a[1] = {};
  aclTensor* t = make_tensor({1}, ACL_FLOAT, a);
  const aclTensor* elements[] = {t};
  aclTensorList* first = aclCreateTensorList(elements, 1);
  aclTensorList* second = aclCreateTensorList(elements, 1);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(aclDestroyTensorList(first), ACLNN_SUCCESS);
  EXPECT_FALSE(tensor_is_live(t));
  EXPECT_EQ(aclDestroyTensorList(second), ACLNN_ERR_PARAM_INVALID);
  EXPECT_FALSE(tensor_list_is_live(second));
}

TEST(CompatLists, ScalarListOwnsItsScalars) {
  float f = 0.5f;
  int32_t i = -3;
  aclScalar* sf = aclCreateScalar(&f, ACL_FLOAT);
  aclScalar* si = aclCreateScalar(&i, ACL_INT32);
  ASSERT_TRUE(sf && si);
  const aclScalar* elements[] = {sf, si};
  aclScalarList* list = aclCreateScalarList(elements, 2);
  ASSERT_NE(list, nullptr);
  EXPECT_TRUE(scalar_list_is_live(list));
  uint64_t size = 0;
  EXPECT_EQ(aclGetScalarListSize(list, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 2u);
  EXPECT_FALSE(mantissa::compat::first_dead_element(*list).has_value());
  EXPECT_EQ(mantissa::compat::scalar_as_double(*list->elements[1].handle), -3.0);

  EXPECT_EQ(aclDestroyScalarList(list), ACLNN_SUCCESS);
  EXPECT_FALSE(scalar_list_is_live(list));
  EXPECT_FALSE(scalar_is_live(sf));
  EXPECT_FALSE(scalar_is_live(si));
  EXPECT_EQ(aclDestroyScalar(sf), ACLNN_ERR_PARAM_INVALID);

  // A scalar destroyed before its list is reported, not dereferenced.
  aclScalar* s1 = aclCreateScalar(&f, ACL_FLOAT);
  aclScalar* s2 = aclCreateScalar(&f, ACL_FLOAT);
  const aclScalar* pair[] = {s1, s2};
  list = aclCreateScalarList(pair, 2);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(aclDestroyScalar(s2), ACLNN_SUCCESS);
  EXPECT_EQ(mantissa::compat::first_dead_element(*list), 1u);
  EXPECT_EQ(aclDestroyScalarList(list), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "aclDestroyScalarList: element 1 ("));
  EXPECT_FALSE(scalar_is_live(s1));
}

TEST(CompatLists, RegistrySerialsAreNeverReissued) {
  mantissa::compat::HandleRegistry<int> registry;
  int x = 0;
  const uint64_t first = registry.add(&x);
  EXPECT_NE(first, 0u);
  EXPECT_EQ(registry.serial(&x), first);
  EXPECT_TRUE(registry.remove(&x, first));
  EXPECT_FALSE(registry.is_live(&x));
  const uint64_t second = registry.add(&x);  // the same address again
  EXPECT_NE(second, first);
  EXPECT_FALSE(registry.remove(&x, first));  // the old serial does not match the new handle
  EXPECT_TRUE(registry.is_live(&x));
  EXPECT_TRUE(registry.remove(&x));
  EXPECT_FALSE(registry.remove(&x));
}

// --- Formats -------------------------------------------------------------------------------------

TEST(CompatLists, CheckTensorListArgNamesTheElement) {
  float a[1] = {}, b[1] = {};
  aclTensor* ta = make_tensor({1}, ACL_FLOAT, a);
  aclTensor* tb = make_tensor({1}, ACL_FLOAT, b, static_cast<aclFormat>(3));  // NC1HWC0
  const aclTensor* elements[] = {ta, tb};
  aclTensorList* list = aclCreateTensorList(elements, 2);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(mantissa::compat::check_tensor_list_arg("aclnnTest", "tensors", list),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(recent(), "aclnnTest: tensors[1] format 3 is not supported (expected ND, 2)");
  EXPECT_EQ(mantissa::compat::check_tensor_list_arg("aclnnTest", "tensors", nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent(), "aclnnTest: tensors is null");
  EXPECT_EQ(
      mantissa::compat::check_tensor_list_arg("aclnnTest", "tensors", foreign<aclTensorList>()),
      ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(contains(recent(), "is not a live aclTensorList"));
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
}

// --- aclScalar -----------------------------------------------------------------------------------

TEST(CompatLists, ScalarCopiesTheValue) {
  float f = 1.5f;
  aclScalar* s = aclCreateScalar(&f, ACL_FLOAT);
  ASSERT_NE(s, nullptr);
  f = 2.5f;  // changing the source after creation does not change the scalar
  EXPECT_EQ(mantissa::compat::scalar_as_double(*s), 1.5);
  EXPECT_EQ(mantissa::compat::scalar_dtype(*s), DType::kFloat32);
  const auto bytes = mantissa::compat::scalar_bytes(*s);
  ASSERT_EQ(bytes.size(), sizeof(float));
  float copied = 0.0f;
  std::memcpy(&copied, bytes.data(), sizeof copied);
  EXPECT_EQ(copied, 1.5f);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
}

template <class T>
void expect_scalar(aclDataType dtype, T value, double expected) {
  T source = value;
  aclScalar* s = aclCreateScalar(&source, dtype);
  ASSERT_NE(s, nullptr) << static_cast<int>(dtype) << ": " << recent();
  std::memset(&source, 0x5A, sizeof source);
  EXPECT_EQ(mantissa::compat::scalar_dtype(*s), static_cast<DType>(dtype));
  EXPECT_EQ(mantissa::compat::scalar_bytes(*s).size(), sizeof(T)) << static_cast<int>(dtype);
  EXPECT_EQ(std::memcmp(mantissa::compat::scalar_bytes(*s).data(), &value, sizeof(T)), 0);
  EXPECT_EQ(mantissa::compat::scalar_as_double(*s), expected) << static_cast<int>(dtype);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
}

TEST(CompatLists, ScalarOfEverySizedDtype) {
  expect_scalar<float>(ACL_FLOAT, -0.1f, static_cast<double>(-0.1f));
  expect_scalar<uint16_t>(ACL_FLOAT16, mantissa::float_to_fp16_bits(65504.0f), 65504.0);
  expect_scalar<uint16_t>(ACL_FLOAT16, 0x0001, 0x1p-24);  // the smallest subnormal
  expect_scalar<uint16_t>(ACL_BF16, mantissa::float_to_bf16_bits(-3.0f), -3.0);
  expect_scalar<double>(ACL_DOUBLE, 0.1, 0.1);
  expect_scalar<int8_t>(ACL_INT8, -128, -128.0);
  expect_scalar<int16_t>(ACL_INT16, -32768, -32768.0);
  expect_scalar<int32_t>(ACL_INT32, -2147483647 - 1, -2147483648.0);
  expect_scalar<int64_t>(ACL_INT64, int64_t{1} << 53, 9007199254740992.0);
  expect_scalar<uint8_t>(ACL_UINT8, 255, 255.0);
  expect_scalar<uint16_t>(ACL_UINT16, 65535, 65535.0);
  expect_scalar<uint32_t>(ACL_UINT32, 4294967295u, 4294967295.0);
  expect_scalar<uint64_t>(ACL_UINT64, uint64_t{1} << 63, 9223372036854775808.0);
  expect_scalar<bool>(ACL_BOOL, true, 1.0);
  expect_scalar<bool>(ACL_BOOL, false, 0.0);
}

TEST(CompatLists, ScalarRefusesDtypesWithoutASize) {
  double value = 1.0;
  EXPECT_EQ(aclCreateScalar(&value, ACL_DT_UNDEFINED), nullptr);
  EXPECT_TRUE(contains(recent(), "aclCreateScalar: dataType -1 is not supported"));
  EXPECT_EQ(aclCreateScalar(&value, ACL_STRING), nullptr);
  EXPECT_TRUE(contains(recent(), "dataType 13 is not supported"));
  EXPECT_EQ(aclCreateScalar(&value, ACL_COMPLEX64), nullptr);
  EXPECT_EQ(aclCreateScalar(&value, static_cast<aclDataType>(99)), nullptr);
  EXPECT_TRUE(contains(recent(), "dataType 99 is not supported"));
}

// --- aclIntArray, aclBoolArray -------------------------------------------------------------------

TEST(CompatLists, ArraysCopyTheirValues) {
  int64_t ints[3] = {-1, 0, std::numeric_limits<int64_t>::max()};
  bool bools[3] = {true, false, true};
  aclIntArray* ia = aclCreateIntArray(ints, 3);
  aclBoolArray* ba = aclCreateBoolArray(bools, 3);
  ASSERT_TRUE(ia && ba);
  ints[0] = 42;
  bools[0] = false;
  const auto iv = mantissa::compat::int_array_values(*ia);
  const auto bv = mantissa::compat::bool_array_values(*ba);
  ASSERT_EQ(iv.size(), 3u);
  ASSERT_EQ(bv.size(), 3u);
  EXPECT_EQ(iv[0], -1);
  EXPECT_EQ(iv[2], std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(bv[0]);
  EXPECT_FALSE(bv[1]);
  EXPECT_TRUE(bv[2]);
  uint64_t size = 0;
  EXPECT_EQ(aclGetBoolArraySize(ba, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  EXPECT_TRUE(int_array_is_live(ia));
  EXPECT_TRUE(bool_array_is_live(ba));
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_FALSE(int_array_is_live(ia));
  EXPECT_FALSE(bool_array_is_live(ba));
}

}  // namespace

}  // namespace mantissa::testing
