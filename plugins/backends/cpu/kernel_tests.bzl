"""The CPU backend's kernel tests (one <name>.cc each, built against the
backend fixture, once per GEMM engine). Listed here so //tests/sanitized
rebuilds every one of them under ASan + UBSan without a second list."""

KERNEL_TESTS = [
    "plugin_test",
    "gemm_test",
    "gemm_epilogue_test",
    "fused_classifier_test",
    "elementwise_test",
    "softmax_cross_entropy_test",
    "layernorm_test",
    "residual_layernorm_test",
    "embedding_test",
    "reduce_test",
    "optimizers_test",
    "multi_tensor_optimizers_test",
    "stochastic_rounding_optimizers_test",
    "optimizer_pieces_test",
    "memory_light_optimizers_test",
    "multi_tensor_light_optimizers_test",
    "attention_test",
    "conv_test",
    "pool_test",
    "batchnorm_test",
    "fp8_test",
    "fp8_scale_update_test",
    "tensor_stats_test",
]
