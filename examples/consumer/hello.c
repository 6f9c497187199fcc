/* hello.c — the smallest C client, built with pkg-config:
 *   cc hello.c $(pkg-config --cflags --libs porta) -o hello
 * Runs Relu through the C ABI and prints the ABI version and the result. */
#include <stdio.h>

#include "porta/porta.h"

int main(void) {
  float x[4] = {-1.5f, 0.0f, 2.0f, -0.25f}, y[4];
  int64_t shape[1] = {4};
  porta_tensor tx = NULL, ty = NULL;
  if (porta_abi_version() != PORTA_ABI_VERSION) {
    fprintf(stderr, "hello: built for ABI %u, libporta has %u\n", PORTA_ABI_VERSION, porta_abi_version());
    return 1;
  }
  if (porta_tensor_wrap_host(x, sizeof x, PORTA_F32, shape, 1, &tx) != PORTA_OK ||
      porta_op_call("Relu", &tx, 1, NULL, &ty, 1) != PORTA_OK ||
      porta_tensor_copy_to_host(ty, y, sizeof y) != PORTA_OK) {
    fprintf(stderr, "hello: %s\n", porta_last_error());
    return 1;
  }
  printf("porta %s ABI %u relu: %g %g %g %g\n", porta_version(), porta_abi_version(), y[0], y[1], y[2], y[3]);
  porta_tensor_free(tx);
  porta_tensor_free(ty);
  return y[0] == 0.0f && y[2] == 2.0f ? 0 : 1;
}
