// porta gpu_emu — fibers: stacks the emulator switches between on one cpu thread, one per
// emulated GPU thread of the running block.
//
// x86-64 switches with a few instructions of its own (callee-saved registers, MXCSR and the
// x87 control word); other targets use ucontext. Either way AddressSanitizer is told about
// every switch (__sanitizer_start/finish_switch_fiber), so the sanitizer build checks kernels
// running on fiber stacks without false reports.
#pragma once
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace porta::porta_gpu_emu::emu {

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  /// A fiber with its own stack (mapped, with a guard page below it); not started.
  explicit Fiber(size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /// Makes the next resume() start `entry(arg)` from the top of the stack (whatever the fiber
  /// was doing is abandoned). `entry` must never return: it loops, suspend()ing between runs.
  void reset(Entry entry, void* arg);
  /// Runs the fiber from the calling (scheduler) context until it calls suspend().
  void resume();
  /// From inside the fiber: back to the context that resumed it.
  void suspend();
  /// Whether `sp` is a stack pointer on this fiber's stack (the fault handler's test).
  bool on_stack(const void* sp) const {
    return static_cast<const char*>(sp) >= stack_ && static_cast<const char*>(sp) <= stack_ + stack_bytes_;
  }

 private:
  static void start(Fiber* self);  // first code a fiber runs
#if !defined(__x86_64__)
  static void start_ucontext(unsigned lo, unsigned hi);  // makecontext passes ints
#endif

  Entry entry_ = nullptr;
  void* arg_ = nullptr;

  char* stack_ = nullptr;  // lowest usable address
  size_t stack_bytes_ = 0;
  char* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
#if defined(__x86_64__)
  void* sp_ = nullptr;         // the fiber's saved stack pointer
  void* caller_sp_ = nullptr;  // the scheduler's, while the fiber runs
#else
  ucontext_t context_{}, caller_{};
#endif
  // AddressSanitizer's bookkeeping of the two stacks (unused without it).
  void* fake_stack_ = nullptr;
  void* caller_fake_stack_ = nullptr;
  const void* caller_bottom_ = nullptr;
  size_t caller_size_ = 0;
};

}  // namespace porta::porta_gpu_emu::emu
