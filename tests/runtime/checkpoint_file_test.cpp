// Checkpoint files (CK-2..CK-5): written whole and synced, never through a
// link, the last k kept; every damaged, truncated, foreign or newer file
// refused with its name and the problem, the previous one read instead.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "quern/checkpoint_file.hpp"
#include "quern/error.hpp"
#include "quern/format/crc32c.hpp"
#include "quern/state_bytes.hpp"
#include "quern/whole_file.hpp"
#include "temp_dir.hpp"

using namespace quern;
namespace fs = std::filesystem;

namespace {

checkpoint_contents sample(int64_t step) {
  checkpoint_contents c;
  c.step = step;
  c.sections["queue/q"] = std::string("rows\0\1\2", 7);
  c.sections["reader/0"] = "state " + std::to_string(step);
  c.sections["runner/r"] = "";
  return c;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string refusal(const std::string& path) {
  try {
    read_checkpoint(path);
  } catch (const data_loss_error& e) {
    return e.what();
  }
  return "(read)";
}

/// The bytes with a little-endian u32 at `at` replaced and the header's and
/// the whole file's checksums made right again.
std::string with_u32(std::string b, size_t at, uint32_t v) {
  state_writer w;
  w.write_u32(v);
  b.replace(at, 4, w.bytes());
  state_writer h;
  h.write_u32(crc32c(b.data(), 24));
  b.replace(24, 4, h.bytes());
  state_writer t;
  t.write_u32(crc32c(b.data(), b.size() - 4));
  b.replace(b.size() - 4, 4, t.bytes());
  return b;
}

size_t tmp_files(const std::string& dir) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator(dir))
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

} // namespace

TEST_CASE("CK-2 a checkpoint round-trips through its file", "[CK-2]") {
  test::temp_dir tmp;
  auto dir = tmp / "a/b"; // made as needed
  auto path = write_checkpoint(dir, sample(7));
  CHECK(path == dir + "/ckpt-7.quern");
  CHECK(path == checkpoint_path(dir, 7));
  CHECK(read_checkpoint(path) == sample(7));
  CHECK(slurp(path) == encode_checkpoint(sample(7)));
  checkpoint_contents none; // no sections at all
  none.step = 0;
  CHECK(read_checkpoint(write_checkpoint(dir, none)) == none);
  // Written again at the same step: replaced whole.
  auto other = sample(7);
  other.sections["reader/0"] = "other";
  write_checkpoint(dir, other);
  CHECK(read_checkpoint(path) == other);
  CHECK(tmp_files(dir) == 0);
}

TEST_CASE("CK-2 the format: magic, version, step, sections, checksums, little-endian",
          "[CK-2]") {
  checkpoint_contents c;
  c.step = 0x0102;
  c.sections["ab"] = "xyz";
  auto b = encode_checkpoint(c);
  REQUIRE(b.size() == 28 + 16 + 2 + 3 + 4 + 4);
  CHECK(b.substr(0, 8) == "quernckp");
  CHECK(b.substr(8, 4) == std::string("\1\0\0\0", 4));
  CHECK(b.substr(12, 8) == std::string("\x02\x01\0\0\0\0\0\0", 8));
  CHECK(b.substr(20, 4) == std::string("\1\0\0\0", 4));
  state_reader r{b, "file"};
  r.read_u64();
  r.read_u32();
  r.read_i64();
  r.read_u32();
  CHECK(r.read_u32() == crc32c(b.data(), 24));
  CHECK(r.read_u32() == 2);
  CHECK(r.read_u64() == 3);
  CHECK(r.read_u32() == crc32c(b.data() + 28, 12));
  CHECK(b.substr(44, 5) == "abxyz");
  r.read_u32(); // "abxy"
  r.read_u8();  // "z"
  CHECK(r.read_u32() == crc32c(std::string_view("abxyz")));
  CHECK(r.read_u32() == crc32c(b.data(), b.size() - 4));
  r.expect_end();
}

TEST_CASE("CK-2 bad arguments are refused before anything is written", "[CK-2]") {
  test::temp_dir tmp;
  CHECK_THROWS_MATCHES(write_checkpoint(tmp.path(), sample(1), 0), invalid_argument_error,
                       Catch::Message("keep_last must be >= 1 not 0"));
  CHECK_THROWS_MATCHES(write_checkpoint(tmp.path(), sample(-1)), invalid_argument_error,
                       Catch::Message("a checkpoint's step must be >= 0 not -1"));
  auto c = sample(1);
  c.sections[""] = "x";
  CHECK_THROWS_MATCHES(
      write_checkpoint(tmp.path(), c), invalid_argument_error,
      Catch::Message("a checkpoint section's name must be 1..4096 bytes, "
                     "not 0"));
  CHECK(list_checkpoints(tmp.path()).empty());
}

TEST_CASE("CK-2 a planted link at the temporary or the final name is not written through",
          "[CK-2]") {
  test::temp_dir tmp;
  auto victim = tmp.write("victim", "precious\n");
  // The temporary file is created with O_EXCL | O_NOFOLLOW: a link there
  // (pointing anywhere, or nowhere) makes the create fail, never follow it.
  auto link = tmp / "ckpt-1.quern.tmp.planted";
  fs::create_symlink(victim, link);
  CHECK(detail::create_exclusive(link) == -EEXIST);
  fs::create_symlink(tmp / "nowhere", tmp / "dangling");
  CHECK(detail::create_exclusive(tmp / "dangling") == -EEXIST);
  CHECK(!fs::exists(tmp / "nowhere"));
  CHECK(slurp(victim) == "precious\n");
  // A link at the final name is replaced by the file, not written through.
  fs::create_symlink(victim, tmp / "ckpt-1.quern");
  auto path = write_checkpoint(tmp.path(), sample(1));
  CHECK(slurp(victim) == "precious\n");
  CHECK(!fs::is_symlink(path));
  CHECK(read_checkpoint(path) == sample(1));
}

TEST_CASE("CK-2 a failed write names the path and leaves the previous checkpoint",
          "[CK-2]") {
  test::temp_dir tmp;
  auto good = write_checkpoint(tmp.path(), sample(8));
  // The final name is taken by a directory with something in it: the rename
  // fails after the temporary file was written.
  fs::create_directories(tmp / "ckpt-9.quern/x");
  auto path = tmp / "ckpt-9.quern";
  CHECK_THROWS_MATCHES(
      write_checkpoint(tmp.path(), sample(9)), op_error,
      Catch::Message("cannot write checkpoint '" + path + "': Is a directory"));
  CHECK(read_checkpoint(good) == sample(8));
  CHECK(tmp_files(tmp.path()) == 0);
  std::vector<std::string> refused;
  auto latest = read_latest_checkpoint(tmp.path(), &refused);
  REQUIRE(latest);
  CHECK(*latest == sample(8));
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] ==
        "checkpoint '" + path + "': not a quern checkpoint: it is a directory");
  // A directory that cannot be made is named.
  auto file = tmp.write("plain", "x");
  CHECK_THROWS_MATCHES(write_checkpoint(file + "/sub", sample(1)), op_error,
                       Catch::Message("cannot create checkpoint directory '" + file +
                                      "/sub': Not a directory"));
}

TEST_CASE("CK-3 the last keep_last checkpoints stay, never the one just written goes",
          "[CK-3]") {
  test::temp_dir tmp;
  for (int64_t step : {10, 2, 30, 4, 50})
    write_checkpoint(tmp.path(), sample(step), 2);
  // After each write two are left: the one written, and the newest other.
  CHECK(list_checkpoints(tmp.path()) ==
        std::vector<std::string>{tmp / "ckpt-30.quern", tmp / "ckpt-50.quern"});
  write_checkpoint(tmp.path(), sample(5), 2); // older than both: it stays
  CHECK(list_checkpoints(tmp.path()) ==
        std::vector<std::string>{tmp / "ckpt-5.quern", tmp / "ckpt-50.quern"});
  for (int64_t step = 60; step < 65; ++step)
    write_checkpoint(tmp.path(), sample(step));
  CHECK(list_checkpoints(tmp.path()).size() == 3);
  CHECK(list_checkpoints(tmp.path()).front() == tmp / "ckpt-62.quern");
}

TEST_CASE("CK-6 a file written without sync reads whole, and keep_also stays beside the "
          "keep_last newest",
          "[CK-6]") {
  test::temp_dir tmp;
  checkpoint_write_options synced;
  synced.keep_last = 2;
  auto first = write_checkpoint(tmp.path(), sample(1), synced);
  checkpoint_write_options unsynced = synced;
  unsynced.sync = false;
  unsynced.keep_also = first;
  for (int64_t step = 2; step <= 5; ++step)
    write_checkpoint(tmp.path(), sample(step), unsynced);
  // The two newest, and the synced one they do not replace.
  CHECK(list_checkpoints(tmp.path()) == std::vector<std::string>{tmp / "ckpt-1.quern",
                                                                 tmp / "ckpt-4.quern",
                                                                 tmp / "ckpt-5.quern"});
  CHECK(read_checkpoint(tmp / "ckpt-5.quern") == sample(5));
  CHECK(read_checkpoint(tmp / "ckpt-1.quern") == sample(1));
  // A synced write keeps no other: the oldest beyond keep_last go.
  write_checkpoint(tmp.path(), sample(6), synced);
  CHECK(list_checkpoints(tmp.path()) ==
        std::vector<std::string>{tmp / "ckpt-5.quern", tmp / "ckpt-6.quern"});
  // keep_also naming a file that is gone changes nothing.
  unsynced.keep_also = tmp / "ckpt-1.quern";
  write_checkpoint(tmp.path(), sample(7), unsynced);
  CHECK(list_checkpoints(tmp.path()) ==
        std::vector<std::string>{tmp / "ckpt-6.quern", tmp / "ckpt-7.quern"});
  checkpoint_write_options bad;
  bad.keep_last = 0;
  CHECK_THROWS_AS(write_checkpoint(tmp.path(), sample(8), bad), invalid_argument_error);
}

TEST_CASE("CK-3 only checkpoint names are listed, by step", "[CK-3]") {
  test::temp_dir tmp;
  CHECK(list_checkpoints(tmp / "absent").empty());
  for (auto name : {"ckpt-x.quern", "ckpt-.quern", "ckpt-1.quern.tmp.abc", "notes.txt",
                    "ckpt-1.quernx", "ckpt-+1.quern"})
    tmp.write(name, "x");
  tmp.write("ckpt-100.quern", "");
  tmp.write("ckpt-9.quern", "");
  CHECK(list_checkpoints(tmp.path()) ==
        std::vector<std::string>{tmp / "ckpt-9.quern", tmp / "ckpt-100.quern"});
  auto file = tmp.write("file", "x");
  CHECK_THROWS_AS(list_checkpoints(file), op_error);
}

TEST_CASE("CK-4 CK-5 a checkpoint cut at every offset is refused as truncated, and the "
          "previous one is read",
          "[CK-4][CK-5]") {
  test::temp_dir tmp;
  write_checkpoint(tmp.path(), sample(1));
  auto good = encode_checkpoint(sample(2));
  auto path = tmp / "ckpt-2.quern";
  for (size_t len = 0; len < good.size(); ++len) {
    INFO("cut at " << len);
    put(path, good.substr(0, len));
    auto why = refusal(path);
    if (len == 0)
      CHECK(why ==
            "checkpoint '" + path + "': not a quern checkpoint: the file is empty");
    else
      CHECK(why.rfind("checkpoint '" + path + "': truncated at byte " +
                          std::to_string(len) + " (expected ",
                      0) == 0);
    std::vector<std::string> refused;
    std::string read_from;
    auto latest = read_latest_checkpoint(tmp.path(), &refused, &read_from);
    REQUIRE(latest);
    CHECK(*latest == sample(1));
    CHECK(read_from == tmp / "ckpt-1.quern");
    CHECK(refused == std::vector<std::string>{why});
  }
  put(path, good);
  CHECK(*read_latest_checkpoint(tmp.path()) == sample(2));
}

TEST_CASE(
    "CK-4 CK-5 every single-bit flip of a checkpoint is refused, naming the problem",
    "[CK-4][CK-5]") {
  test::temp_dir tmp;
  write_checkpoint(tmp.path(), sample(1));
  auto good = encode_checkpoint(sample(2));
  auto path = tmp / "ckpt-2.quern";
  auto prefix = "checkpoint '" + path + "': ";
  std::map<std::string, int> kinds;
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    INFO("bit " << bit);
    auto b = good;
    b[bit / 8] = static_cast<char>(b[bit / 8] ^ (1 << (bit % 8)));
    put(path, b);
    auto why = refusal(path);
    REQUIRE(why.rfind(prefix, 0) == 0);
    auto problem = why.substr(prefix.size());
    if (bit < 64)
      CHECK(problem == "not a quern checkpoint: it does not start with quern's magic "
                       "\"quernckp\"");
    kinds[problem.substr(0, problem.find_first_of("(\""))]++;
    std::vector<std::string> refused;
    auto latest = read_latest_checkpoint(tmp.path(), &refused);
    REQUIRE(latest);
    CHECK(*latest == sample(1));
    CHECK(refused == std::vector<std::string>{why});
  }
  // Each part of the file is checked by its own check.
  CHECK(kinds.count("checksum mismatch of the header "));
  CHECK(kinds.count("checksum mismatch of section "));
  CHECK(kinds.count("checksum mismatch of the whole file "));
  CHECK(kinds.count("written by a newer quern "));
}

TEST_CASE("CK-4 a wrong or newer version, a foreign file, trailing bytes and a duplicate "
          "section are refused",
          "[CK-4][CK-5]") {
  test::temp_dir tmp;
  write_checkpoint(tmp.path(), sample(1));
  auto good = encode_checkpoint(sample(2));
  auto expect = [&](const std::string& name, const std::string& bytes,
                    const std::string& problem) {
    auto path = tmp.write(name, bytes);
    CHECK(refusal(path) == "checkpoint '" + path + "': " + problem);
  };
  expect("ckpt-2.quern", with_u32(good, 8, 2),
         "written by a newer quern (format version 2, this one reads up to 1)");
  expect("ckpt-3.quern", with_u32(good, 8, 0), "unknown format version 0");
  expect("ckpt-4.quern", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16),
         "not a quern checkpoint: it does not start with quern's magic \"quernckp\"");
  expect("ckpt-5.quern", "", "not a quern checkpoint: the file is empty");
  expect("ckpt-6.quern", good + "x",
         "1 trailing bytes after the end at byte " + std::to_string(good.size()));
  // A header (checksum right) that counts one section more than there is.
  expect("ckpt-7.quern", with_u32(good, 20, 4),
         "truncated at byte " + std::to_string(good.size()) +
             " (expected the header of section 3 at byte " +
             std::to_string(good.size() - 4) + ")");
  // Two sections of one name, each checksum right.
  checkpoint_contents twins;
  twins.step = 2;
  twins.sections["s/a"] = "1";
  twins.sections["s/b"] = "2";
  auto dup = encode_checkpoint(twins);
  auto second = dup.rfind("s/b");
  dup[second + 2] = 'a';
  state_writer crc;
  crc.write_u32(crc32c(std::string_view("s/a2")));
  dup.replace(second + 4, 4, crc.bytes());
  dup = with_u32(dup, 20, 2);
  expect("ckpt-8.quern", dup,
         "duplicate section \"s/a\" at byte " + std::to_string(second - 16));
  fs::create_directory(tmp / "ckpt-9.quern");
  CHECK(refusal(tmp / "ckpt-9.quern") ==
        "checkpoint '" + (tmp / "ckpt-9.quern") +
            "': not a quern checkpoint: it is a directory");
  // A FIFO is refused at once, not waited on for a writer.
  REQUIRE(::mkfifo((tmp / "ckpt-10.quern").c_str(), 0600) == 0);
  CHECK(refusal(tmp / "ckpt-10.quern") ==
        "checkpoint '" + (tmp / "ckpt-10.quern") +
            "': not a quern checkpoint: it is not a regular file");
  // A file that cannot be opened is its I/O error, naming it.
  CHECK_THROWS_MATCHES(read_checkpoint(tmp / "ckpt-99.quern"), not_found_error,
                       Catch::Message("cannot read checkpoint '" +
                                      (tmp / "ckpt-99.quern") +
                                      "': No such file or directory"));
  // Every one of them is passed over, newest first, for the good one.
  std::vector<std::string> refused;
  auto latest = read_latest_checkpoint(tmp.path(), &refused);
  REQUIRE(latest);
  CHECK(*latest == sample(1));
  CHECK(refused.size() == 9);
  CHECK(refused.front().find("ckpt-10.quern") != std::string::npos);
  CHECK(refused.back().find("ckpt-2.quern") != std::string::npos);
}

TEST_CASE("CK-5 no checkpoint that reads is nullopt, with each refusal listed",
          "[CK-5]") {
  test::temp_dir tmp;
  CHECK(!read_latest_checkpoint(tmp.path()));
  CHECK(!read_latest_checkpoint(tmp / "absent"));
  tmp.write("ckpt-1.quern", "junk");
  std::vector<std::string> refused;
  CHECK(!read_latest_checkpoint(tmp.path(), &refused));
  CHECK(refused.size() == 1);
}
