/* example_hostsim — an out-of-tree porta backend: device kind "hostsim", served entirely by
 * this plugin. Shared declarations of hostsim_backend.c (memory, copies) and
 * hostsim_kernels.c (f32 kernels). */
#ifndef EXAMPLE_HOSTSIM_H
#define EXAMPLE_HOSTSIM_H

#include "porta/plugin.h"

/* The table porta gave porta_plugin_init; every call into porta goes through it. */
extern const porta_plugin_api* hostsim_porta;

/* Registers the hostsim backend (memory, copies, capabilities). */
porta_status hostsim_register_backend(void);
/* Registers the kernels for kind "hostsim": Add, Sub, Mul, Div, Relu, MatMul (f32). */
porta_status hostsim_register_kernels(void);

#endif
