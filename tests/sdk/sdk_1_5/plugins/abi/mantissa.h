/* Mantissa plugin ABI: the one header plugin authors include. */
#ifndef MANTISSA_PLUGINS_ABI_MANTISSA_H_
#define MANTISSA_PLUGINS_ABI_MANTISSA_H_

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/abi/mnt_precision.h"

#endif /* MANTISSA_PLUGINS_ABI_MANTISSA_H_ */
