/* Mantissa plugin ABI: the one header plugin authors include. */
/* FROZEN COPY as released in ABI 1.0 (see mnt_common.h here). */
#ifndef MANTISSA_TESTS_ABI_V1_0_MANTISSA_H_
#define MANTISSA_TESTS_ABI_V1_0_MANTISSA_H_

#include "tests/abi/v1_0/mnt_backend.h"
#include "tests/abi/v1_0/mnt_common.h"
#include "tests/abi/v1_0/mnt_model.h"
#include "tests/abi/v1_0/mnt_precision.h"

#endif /* MANTISSA_TESTS_ABI_V1_0_MANTISSA_H_ */
