// Placing runtime objects in caller-supplied memory, with destructors that run.
//
// The runtime this mirrors once took raw memory from an arena for a handle and never
// ran its constructor or destructor; once the handle gained members that own
// resources, they leaked. create_in() constructs with placement new and destroy()
// runs ~T() explicitly, so state placed in an arena is torn down like any object.
#ifndef ETHOSU_RT_ARENA_H_
#define ETHOSU_RT_ARENA_H_

#include <stddef.h>
#include <stdint.h>

#include <new>
#include <utility>

namespace ethosu_rt {

// Constructs a T in `memory` (at least sizeof(T) bytes, aligned for T); nullptr when the
// memory is too small or misaligned.
template <typename T, typename... Args>
T* create_in(void* memory, size_t size, Args&&... args) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(memory);
  if (memory == nullptr || size < sizeof(T) || address % alignof(T) != 0) {
    return nullptr;
  }
  return ::new (memory) T(std::forward<Args>(args)...);
}

// Runs the destructor of an object made by create_in(); the memory stays the caller's.
template <typename T>
void destroy(T* object) {
  if (object != nullptr) {
    object->~T();
  }
}

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_ARENA_H_
