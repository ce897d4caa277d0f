// Objects placed in caller memory run their constructor and destructor (review finding 4:
// a handle taken raw from an arena whose destructor never ran).
#include "ethosu_rt/arena.h"

#include "test_api.h"

namespace {

struct Counted {
  explicit Counted(int* destroyed) : destroyed_(destroyed), value(42) {}
  ~Counted() { ++*destroyed_; }
  int* destroyed_;
  int value;
};

TEST(Arena, CreateRunsTheConstructorAndDestroyRunsTheDestructor) {
  alignas(Counted) unsigned char memory[sizeof(Counted)];
  int destroyed = 0;
  Counted* object = ethosu_rt::create_in<Counted>(memory, sizeof(memory), &destroyed);
  ASSERT_TRUE(object != nullptr);
  EXPECT_EQ(object->value, 42);
  EXPECT_EQ(static_cast<void*>(object), static_cast<void*>(memory));
  ethosu_rt::destroy(object);
  EXPECT_EQ(destroyed, 1);
}

TEST(Arena, RefusesMemoryThatIsTooSmallOrMisaligned) {
  alignas(Counted) unsigned char memory[sizeof(Counted) + alignof(Counted)];
  int destroyed = 0;
  EXPECT_TRUE(ethosu_rt::create_in<Counted>(memory, sizeof(Counted) - 1, &destroyed) == nullptr);
  EXPECT_TRUE(ethosu_rt::create_in<Counted>(memory + 1, sizeof(Counted), &destroyed) == nullptr);
  EXPECT_TRUE(ethosu_rt::create_in<Counted>(nullptr, sizeof(Counted), &destroyed) == nullptr);
  ethosu_rt::destroy<Counted>(nullptr);  // a no-op, like delete nullptr
  EXPECT_EQ(destroyed, 0);
}

}  // namespace
