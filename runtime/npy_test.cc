#include "runtime/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

TEST(NpyTest, ReadsAFileNumPyWrote) {
  std::ifstream in("runtime/testdata/mlp_dynamic_batch.input.npy", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<Tensor> t = ReadNpy(bytes.str(), "input.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(DataTypeToString(t->dtype()), "float32");
  ASSERT_EQ(t->ndim(), 2);
  EXPECT_EQ(t->shape()[0], 4);
  EXPECT_EQ(t->shape()[1], 64);
  // The first values, as NumPy prints them.
  EXPECT_FLOAT_EQ(static_cast<const float*>(t->data())[0], -0.6027625203132629f);
  EXPECT_FLOAT_EQ(static_cast<const float*>(t->data())[3], 1.8810529708862305f);
}

TEST(NpyTest, RoundTripsEveryDtypeAndRank) {
  for (const char* dtype : {"float32", "float64", "int8", "int32", "int64", "uint8", "bool"}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
      Tensor t = *Tensor::Empty(shape, *ParseDataType(dtype));
      for (size_t i = 0; i < t.NumBytes(); ++i)
        static_cast<uint8_t*>(t.data())[i] =
            static_cast<uint8_t>(i * 7 % (dtype[0] == 'b' ? 2 : 251));
      absl::StatusOr<std::string> bytes = WriteNpy(t);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ((bytes->size() - t.NumBytes()) % 64, 0u) << "data starts aligned";
      absl::StatusOr<Tensor> back = ReadNpy(*bytes, "x.npy");
      ASSERT_TRUE(back.ok()) << dtype << ": " << back.status();
      EXPECT_EQ(DataTypeToString(back->dtype()), dtype);
      ASSERT_EQ(std::vector<int64_t>(back->shape().begin(), back->shape().end()), shape);
      EXPECT_EQ(std::memcmp(back->data(), t.data(), t.NumBytes()), 0);
    }
  }
}

TEST(NpyTest, BadFilesAreClearErrors) {
  EXPECT_THAT(ReadNpy("hello", "a.npy").status().message(), HasSubstr("a.npy: not a .npy file"));
  Tensor t = *Tensor::Empty({4}, *ParseDataType("float32"));
  std::string good = *WriteNpy(t);
  EXPECT_THAT(ReadNpy(good.substr(0, good.size() - 1), "b.npy").status().message(),
              HasSubstr("b.npy: 15 bytes of data for shape (4,) of '<f4', which needs 16"));
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 1, ">");
  EXPECT_THAT(ReadNpy(big_endian, "c.npy").status().message(),
              HasSubstr("is not a little-endian number"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THAT(ReadNpy(fortran, "d.npy").status().message(), HasSubstr("Fortran-order"));
  std::string truncated = good.substr(0, 20);
  EXPECT_THAT(ReadNpy(truncated, "e.npy").status().message(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace kiln::runtime
