// porta gpu_emu — fibers (see fiber.hpp).
#include "backends/gpu_emu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#include "backends/gpu_emu/emu_internal.hpp"
#if defined(PORTA_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__)
// porta_gpu_emu_switch(save, to): saves the callee-saved registers, MXCSR and the x87 control
// word on the current stack, stores the stack pointer in *save, and continues on `to` (a stack
// saved the same way, or a fresh one laid out by Fiber::reset).
// porta_gpu_emu_fiber_start: where a fresh stack "returns" to; calls r13(r12).
extern "C" void porta_gpu_emu_switch(void** save, void* to);
extern "C" void porta_gpu_emu_fiber_start();
asm(R"(
  .text
  .globl porta_gpu_emu_switch
  .hidden porta_gpu_emu_switch
  .type porta_gpu_emu_switch,@function
porta_gpu_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size porta_gpu_emu_switch, .-porta_gpu_emu_switch

  .globl porta_gpu_emu_fiber_start
  .hidden porta_gpu_emu_fiber_start
  .type porta_gpu_emu_fiber_start,@function
porta_gpu_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size porta_gpu_emu_fiber_start, .-porta_gpu_emu_fiber_start
)");
#endif

namespace porta::porta_gpu_emu::emu {

Fiber::Fiber(size_t stack_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  mapping_bytes_ = stack_bytes_ + page;
  void* m = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<char*>(m);
  mprotect(mapping_, page, PROT_NONE);  // a stack overflow faults instead of corrupting
  stack_ = mapping_ + page;
}

Fiber::~Fiber() { munmap(mapping_, mapping_bytes_); }

void Fiber::start(Fiber* self) {
#if defined(PORTA_EMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &self->caller_bottom_, &self->caller_size_);
#endif
  self->entry_(self->arg_);
  std::abort();  // entries never return (see reset)
}

#if !defined(__x86_64__)
void Fiber::start_ucontext(unsigned lo, unsigned hi) {
  start(reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
#endif

void Fiber::reset(Entry entry, void* arg) {
  entry_ = entry;
  arg_ = arg;
  fake_stack_ = nullptr;
#if defined(PORTA_EMU_ASAN)
  // Frames of an abandoned run stay poisoned in the shadow; the new run starts clean.
  ASAN_UNPOISON_MEMORY_REGION(stack_, stack_bytes_);
#endif
#if defined(__x86_64__)
  auto top = reinterpret_cast<uintptr_t>(stack_ + stack_bytes_) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 80);
  uint32_t mxcsr;
  uint16_t fpcw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpcw));
  frame[0] = static_cast<uint64_t>(mxcsr) | (static_cast<uint64_t>(fpcw) << 32);
  frame[1] = 0;                                              // r15
  frame[2] = 0;                                              // r14
  frame[3] = reinterpret_cast<uint64_t>(&Fiber::start);     // r13: the function
  frame[4] = reinterpret_cast<uint64_t>(this);               // r12: its argument
  frame[5] = 0;                                              // rbx
  frame[6] = 0;                                              // rbp: ends frame-pointer walks
  frame[7] = reinterpret_cast<uint64_t>(&porta_gpu_emu_fiber_start);
  sp_ = frame;
#else
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = stack_bytes_;
  context_.uc_link = nullptr;
  auto bits = reinterpret_cast<uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::start_ucontext), 2,
              static_cast<unsigned>(bits), static_cast<unsigned>(bits >> 32));
#endif
}

void Fiber::resume() {
#if defined(PORTA_EMU_ASAN)
  __sanitizer_start_switch_fiber(&caller_fake_stack_, stack_, stack_bytes_);
#endif
#if defined(__x86_64__)
  porta_gpu_emu_switch(&caller_sp_, sp_);
#else
  swapcontext(&caller_, &context_);
#endif
#if defined(PORTA_EMU_ASAN)
  __sanitizer_finish_switch_fiber(caller_fake_stack_, nullptr, nullptr);
#endif
}

void Fiber::suspend() {
#if defined(PORTA_EMU_ASAN)
  __sanitizer_start_switch_fiber(&fake_stack_, caller_bottom_, caller_size_);
#endif
#if defined(__x86_64__)
  porta_gpu_emu_switch(&sp_, caller_sp_);
#else
  swapcontext(&context_, &caller_);
#endif
#if defined(PORTA_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack_, &caller_bottom_, &caller_size_);
#endif
}

}  // namespace porta::porta_gpu_emu::emu
