// The filesystem object store: layout, round trips, limits, key validation and crash safety.
#include <filesystem>
#include <fstream>
#include <future>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "adapters/storage/filesystem_store.hpp"

using namespace std::string_literals;
#include "tests/support/environment.hpp"

using namespace ingestd;
namespace fs = std::filesystem;

namespace {

class filesystem_store_test : public ::testing::Test {
protected:
  std::string root = test::make_temp_dir("store");
  ~filesystem_store_test() override { fs::remove_all(root); }

  template <class T, class Call>
  static result<T> wait(Call call) {
    std::promise<result<T>> p;
    call([&p](result<T> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
};

} // namespace

// Every object of a tenant's document lives under the tenant's prefix.
TEST_F(filesystem_store_test, keys_follow_the_storage_layout) {
  EXPECT_EQ(storage_keys::document("t1", "d1", "pdf"), "t1/documents/d1.pdf");
  EXPECT_EQ(storage_keys::transcription("t1", "i1"), "t1/ingestions/i1/transcription-output.json");
  EXPECT_EQ(storage_keys::preprocessed("t1", "i1", "png"), "t1/ingestions/i1/preprocessed.png");
  EXPECT_EQ(storage_keys::page_render("t1", "d1", 2), "t1/review/pages/d1/page-2.png");
}

TEST_F(filesystem_store_test, put_get_exists_round_trip_asynchronously) {
  filesystem_store store{root};
  std::string bytes = "%PDF-1.4 binary\0data"s;
  auto put
      = wait<void>([&](auto cb) { store.put("documents/a.pdf", bytes, "application/pdf", cb); });
  ASSERT_TRUE(put) << put.error().describe();
  auto got = wait<std::string>([&](auto cb) { store.get("documents/a.pdf", 1 << 20, cb); });
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_EQ(*got, bytes);
  EXPECT_TRUE(*wait<bool>([&](auto cb) { store.exists("documents/a.pdf", cb); }));
  EXPECT_FALSE(*wait<bool>([&](auto cb) { store.exists("documents/b.pdf", cb); }));
  EXPECT_TRUE(fs::exists(fs::path{root} / "documents/a.pdf"));
}

TEST_F(filesystem_store_test, overwrite_replaces_whole_object) {
  filesystem_store store{root};
  ASSERT_TRUE(store.put_now("ingestions/i/transcription-output.json", std::string(100000, 'a')));
  ASSERT_TRUE(store.put_now("ingestions/i/transcription-output.json", "short"));
  EXPECT_EQ(*store.get_now("ingestions/i/transcription-output.json", 1 << 20), "short");
}

TEST_F(filesystem_store_test, missing_object_is_permanent_not_found) {
  filesystem_store store{root};
  auto got = wait<std::string>([&](auto cb) { store.get("documents/none.pdf", 100, cb); });
  ASSERT_FALSE(got);
  EXPECT_TRUE(got.error().permanent());
  EXPECT_EQ(got.error().code, "storage.not_found");
}

TEST_F(filesystem_store_test, object_over_the_limit_is_refused) {
  filesystem_store store{root};
  ASSERT_TRUE(store.put_now("documents/big.bin", std::string(1000, 'x')));
  auto got = store.get_now("documents/big.bin", 999);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, "storage.too_large");
  EXPECT_TRUE(got.error().permanent());
  EXPECT_TRUE(store.get_now("documents/big.bin", 1000));
}

TEST_F(filesystem_store_test, traversal_and_malformed_keys_are_rejected) {
  filesystem_store store{root + "/inner"};
  std::ofstream{root + "/secret.txt"} << "outside the store";
  for (auto key : {"../secret.txt", "documents/../../secret.txt", "/etc/passwd", "", "a//b", "./a",
                   "a/.", "a\\b", "a/\n", "documents/.."}) {
    auto got = store.get_now(key, 1 << 20);
    ASSERT_FALSE(got) << key;
    EXPECT_EQ(got.error().code, "storage.bad_key") << key;
    EXPECT_TRUE(got.error().permanent());
    auto put = store.put_now(key, "x");
    EXPECT_FALSE(put) << key;
    EXPECT_FALSE(store.exists_now(key)) << key;
  }
  EXPECT_EQ(fs::file_size(root + "/secret.txt"), std::string{"outside the store"}.size());
}

TEST_F(filesystem_store_test, crash_mid_write_never_leaves_a_partial_object_under_the_key) {
  filesystem_store store{root};
  const std::string key = "documents/crash.pdf";
  ASSERT_TRUE(store.put_now(key, "old complete object"));
  // A child process starts writing a large object and is killed mid-write.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  auto pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    filesystem_store child{root, 1};
    std::string huge(256 << 20, 'n');
    (void)!::write(ready[1], "g", 1);
    (void)child.put_now(key, huge); // killed before this finishes
    ::_exit(0);
  }
  ::close(ready[1]);
  char go;
  ASSERT_EQ(::read(ready[0], &go, 1), 1);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(ready[0]);
  auto got = store.get_now(key, 1u << 30);
  ASSERT_TRUE(got) << got.error().describe();
  // Either the old object or (had the write finished first) the complete new one.
  EXPECT_TRUE(*got == "old complete object" || got->size() == (256u << 20)) << got->size();
}
