// The JIT's disk cache as a directory shared by many processes (a cluster's
// workers): concurrent writers of one key publish whole entries only, and
// temporary files left by dead writers are removed.
#ifdef EMBER_WITH_JIT
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "jit/disk_cache.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using ember::jit::DiskCache;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path p = ember::test::temp_path("disk_cache_" + name);
  fs::create_directories(p);
  return p;
}

// Writer w's entry: its own byte repeated, a size of its own, so a mix of
// two writers' bytes or a short entry is recognisable.
std::string payload(int w, int round) { return std::string(100000 + 4096 * w + round, static_cast<char>('a' + w)); }

bool whole(const std::string& s, int writers) {
  if (s.empty() || s[0] < 'a' || s[0] >= 'a' + writers) return false;
  return s.find_first_not_of(s[0]) == std::string::npos && (s.size() - 100000 - 4096 * (s[0] - 'a')) < 4096;
}

int temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) n += f.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("disk_cache_concurrent_writers_of_one_key_publish_whole_entries", "[jit][cache]") {
  const fs::path dir = fresh_dir("writers");
  constexpr int kWriters = 4, kRounds = 40;
  // Separate processes, as a cluster's workers are. Once a writer's first put
  // is done, the key must read back whole every time: a torn entry would fail
  // its checksum, be removed, and read as a miss.
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      DiskCache c(dir.string(), size_t(1) << 30);
      int status = 0;
      for (int r = 0; r < kRounds; ++r) {
        if (!c.put("k", payload(w, r))) status |= 1;
        const auto got = c.get("k");
        if (!got) status |= 2;
        else if (!whole(*got, kWriters)) status |= 4;
      }
      ::_exit(status);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int st = 0;
    REQUIRE(::waitpid(pid, &st, 0) == pid);
    INFO("writer status bits: 1 failed put, 2 miss after a put, 4 mixed entry");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
  CHECK(temporaries(dir) == 0);
  const auto got = DiskCache(dir.string(), size_t(1) << 30).get("k");
  REQUIRE(got);
  CHECK(whole(*got, kWriters));
  fs::remove_all(dir);
}

TEST_CASE("disk_cache_removes_temporaries_of_dead_writers", "[jit][cache]") {
  const fs::path dir = fresh_dir("stale");
  const fs::path old_tmp = dir / "a.tmp.host.1.0.0", new_tmp = dir / "b.tmp.host.2.0.0";
  std::ofstream(old_tmp) << "left by a writer that died";
  std::ofstream(new_tmp) << "being written now";
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(2));
  DiskCache c(dir.string(), size_t(1) << 30);
  REQUIRE(c.put("k", "entry"));
  CHECK(!fs::exists(old_tmp));
  CHECK(fs::exists(new_tmp));
  CHECK(c.get("k") == std::optional<std::string>("entry"));
  fs::remove_all(dir);
}

TEST_CASE("disk_cache_ignores_and_removes_damaged_entries", "[jit][cache]") {
  const fs::path dir = fresh_dir("damaged");
  DiskCache c(dir.string(), size_t(1) << 30);
  REQUIRE(c.put("torn", std::string(5000, 'x')));
  fs::resize_file(dir / "torn.obj", 3000);
  std::ofstream(dir / "junk.obj") << "not an entry";
  CHECK(!c.get("torn"));
  CHECK(!c.get("junk"));
  CHECK(!fs::exists(dir / "torn.obj"));
  CHECK(!fs::exists(dir / "junk.obj"));
  REQUIRE(c.put("torn", "again"));
  CHECK(c.get("torn") == std::optional<std::string>("again"));
  fs::remove_all(dir);
}
#endif
