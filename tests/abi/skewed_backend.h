// The "skewed" test backend: the CPU backend with ONE op made slightly wrong,
// so tests can show the conformance suite catches a wrong kernel (comparing
// the CPU backend with itself never can).
//
// Backend_Create options: "skew_op=<OP>,skew=<relative>" (OP as sdk::OpName
// spells it, e.g. GEMM or ADAMW_STEP): after the CPU backend ran that op,
// every float output element v (F32/F16/BF16; I32 untouched) is replaced by
// v * (1 + relative), rounded back to the output's dtype. Both keys or
// neither; without them the backend is a faithful forwarder. Every other key
// is passed on to the CPU backend (e.g. "threads=1").
//
// "ignore_pieces=1" (ABI 1.11): the four optimizer ops' params reach the CPU
// backend cut to their 1.10 struct_size, as a backend that predates the
// piece fields (rounding_element, rounding_tensors, rounding_elements) reads
// them -- while this backend still advertises MNT_CAPABILITY_OPTIMIZER_PIECES,
// so the conformance suite's piece checks must catch it.
//
// Built as //tests/abi:mnt_backend_skewed.so; tests may link
// //tests/abi:skewed_backend_lib and call SkewedBackendPluginApi() instead.
#ifndef MANTISSA_TESTS_ABI_SKEWED_BACKEND_H_
#define MANTISSA_TESTS_ABI_SKEWED_BACKEND_H_

#include "plugins/abi/mantissa.h"

namespace mnt::abi_test {

const MNT_Plugin_Api* SkewedBackendPluginApi();

}  // namespace mnt::abi_test

#endif  // MANTISSA_TESTS_ABI_SKEWED_BACKEND_H_
