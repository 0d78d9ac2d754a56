#include "runtime/tensor.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DataTypeTest, ParsesAndPrintsRoundTrip) {
  for (const char* name : {"float32", "float16", "bfloat16", "int8", "int64", "uint8", "bool",
                           "float32x4", "int32x16"}) {
    absl::StatusOr<DLDataType> dtype = ParseDataType(name);
    ASSERT_TRUE(dtype.ok()) << name << ": " << dtype.status();
    EXPECT_EQ(DataTypeToString(*dtype), name);
  }
}

TEST(DataTypeTest, ParsesFieldsExactly) {
  DLDataType f16x4 = *ParseDataType("float16x4");
  EXPECT_EQ(f16x4.code, kDLFloat);
  EXPECT_EQ(f16x4.bits, 16);
  EXPECT_EQ(f16x4.lanes, 4);
  EXPECT_EQ(DataTypeBytes(f16x4), 8u);
  DLDataType b = *ParseDataType("bool");
  EXPECT_EQ(b.code, kDLUInt);
  EXPECT_EQ(b.bits, 1);
  EXPECT_EQ(DataTypeBytes(b), 1u);
}

TEST(DataTypeTest, RejectsGarbage) {
  for (const char* name : {"", "float", "floaty32", "int0", "int999", "float32x", "float32x0",
                           "complex64", "int32x70000"}) {
    absl::StatusOr<DLDataType> dtype = ParseDataType(name);
    ASSERT_FALSE(dtype.ok()) << name;
    EXPECT_THAT(dtype.status().message(), HasSubstr("unknown data type"));
  }
}

TEST(TensorTest, AllocatesAlignedCompactStorage) {
  absl::StatusOr<Tensor> t = Tensor::Empty({2, 3, 5}, *ParseDataType("float32"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->shape(), ElementsAre(2, 3, 5));
  EXPECT_EQ(t->ndim(), 3);
  EXPECT_EQ(t->NumElements(), 30);
  EXPECT_EQ(t->NumBytes(), 120u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t->dl().device.device_type, kDLCPU);
  EXPECT_EQ(t->dl().strides, nullptr);
  // The whole buffer is writable and readable (ASan/valgrind would flag an overrun here).
  std::memset(t->data(), 0x7f, t->NumBytes());
  EXPECT_EQ(static_cast<unsigned char*>(t->data())[119], 0x7f);
}

TEST(TensorTest, CopiesShareStorage) {
  Tensor a = *Tensor::Empty({4}, *ParseDataType("int32"));
  Tensor b = a;
  static_cast<int32_t*>(a.data())[3] = 42;
  EXPECT_EQ(static_cast<int32_t*>(b.data())[3], 42);
  EXPECT_EQ(a.data(), b.data());
}

TEST(TensorTest, ScalarAndEmptyTensors) {
  Tensor scalar = *Tensor::Empty({}, *ParseDataType("float64"));
  EXPECT_EQ(scalar.NumElements(), 1);
  EXPECT_EQ(scalar.NumBytes(), 8u);
  Tensor empty = *Tensor::Empty({0, 7}, *ParseDataType("int8"));
  EXPECT_EQ(empty.NumElements(), 0);
  EXPECT_EQ(empty.NumBytes(), 0u);
  EXPECT_NE(empty.data(), nullptr);
}

TEST(TensorTest, RejectsBadShapesAndDtypes) {
  absl::StatusOr<Tensor> negative = Tensor::Empty({3, -1}, *ParseDataType("float32"));
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("(3, -1)"));

  absl::StatusOr<Tensor> huge =
      Tensor::Empty({int64_t{1} << 40, int64_t{1} << 40}, *ParseDataType("float32"));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);

  absl::StatusOr<Tensor> nibble = Tensor::Empty({8}, DLDataType{kDLInt, 4, 1});
  ASSERT_FALSE(nibble.ok());
  EXPECT_THAT(nibble.status().message(), HasSubstr("int4"));
}

TEST(TensorTest, NullTensorIsUndefined) { EXPECT_FALSE(Tensor().defined()); }

}  // namespace
}  // namespace kiln::runtime
