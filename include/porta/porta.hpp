// porta — hardware-abstraction compute library: one include for the whole C++ API.
#pragma once
#include "porta/attributes.hpp"
#include "porta/backend.hpp"
#include "porta/check.hpp"
#include "porta/device.hpp"
#include "porta/dispatch.hpp"
#include "porta/dtype.hpp"
#include "porta/error.hpp"
#include "porta/npy.hpp"
#include "porta/op.hpp"
#include "porta/ops.hpp"
#include "porta/session.hpp"
#include "porta/tensor.hpp"
#include "porta/util.hpp"

namespace porta {
/// Library version.
const char* version();
}  // namespace porta
