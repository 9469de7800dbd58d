// OpCall's operand checks: labels read "in[1] B" in every message, and the
// expected-shape text of a check is built only when the check fails (the
// checks run on every op call, so a passing check must format nothing).
#include "plugins/backends/common/op_call.h"

#include <string>

#include "gtest/gtest.h"
#include "plugins/abi/mnt_common.h"

namespace mnt::backend {
namespace {

MNT_Tensor Tensor(float* data, int rank, std::initializer_list<int64_t> dims) {
  MNT_Tensor t{};
  t.struct_size = MNT_Tensor_STRUCT_SIZE;
  t.data = data;
  t.dtype = MNT_DTYPE_F32;
  t.rank = rank;
  int i = 0;
  for (int64_t d : dims) t.dims[i++] = d;
  return t;
}

TEST(OperandLabelTest, ReadsLikeDirectionIndexAndName) {
  const OperandLabel label("in", 1, "B");
  EXPECT_EQ(label.str(), "in[1] B");
  EXPECT_EQ(std::string(label), "in[1] B");
  EXPECT_STREQ(label.c_str(), "in[1] B");
  EXPECT_EQ(label + " is x", "in[1] B is x");
  EXPECT_EQ(label + std::string(" is y"), "in[1] B is y");
  EXPECT_EQ("got " + label, "got in[1] B");
  EXPECT_EQ(std::string("got ") + label, "got in[1] B");
  EXPECT_EQ(OperandLabel("out", 12, "dweight").str(), "out[12] dweight");
}

TEST(OpCallTest, MessagesNameTheOperand) {
  float data[6] = {};
  const MNT_Tensor inputs[2] = {Tensor(data, 2, {2, 3}), Tensor(nullptr, 1, {3})};
  const OpCall call("GEMM", inputs, 2, nullptr, 0, nullptr);
  Operand a;
  ASSERT_TRUE(call.Input(0, "A", &a).ok());
  EXPECT_EQ(a.label.str(), "in[0] A");
  Operand b;
  const sdk::Status missing = call.Input(1, "B", &b);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "GEMM: in[1] B is missing (data is NULL)");
  EXPECT_FALSE(call.OptionalInput(5, "bias").present());

  const int64_t wrong[2] = {3, 2};
  const sdk::Status bad = call.ExpectDims(a, 2, wrong, [] { return std::string("[K=3, N]"); });
  EXPECT_EQ(bad.code(), MNT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad.message(), "GEMM: in[0] A is f32[2,3], expected [K=3, N]");
  const sdk::Status bad_text = call.ExpectElements(a, 5, std::string("5 elements"));
  EXPECT_EQ(bad_text.message(), "GEMM: in[0] A is f32[2,3], expected 5 elements");
}

TEST(OpCallTest, ExpectedTextIsBuiltOnlyOnMismatch) {
  float data[6] = {};
  const MNT_Tensor inputs[1] = {Tensor(data, 2, {2, 3})};
  const OpCall call("ADD", inputs, 1, nullptr, 0, nullptr);
  Operand x;
  ASSERT_TRUE(call.Input(0, "x", &x).ok());
  int built = 0;
  auto describe = [&] {
    ++built;
    return std::string("expected text");
  };
  const int64_t dims[2] = {2, 3};
  EXPECT_TRUE(call.ExpectDims(x, 2, dims, describe).ok());
  EXPECT_TRUE(call.ExpectElements(x, 6, describe).ok());
  EXPECT_EQ(built, 0);
  const int64_t other[2] = {2, 4};
  EXPECT_FALSE(call.ExpectDims(x, 2, other, describe).ok());
  EXPECT_FALSE(call.ExpectDims(x, 1, dims, describe).ok());
  EXPECT_FALSE(call.ExpectElements(x, 7, describe).ok());
  EXPECT_EQ(built, 3);
}

}  // namespace
}  // namespace mnt::backend
