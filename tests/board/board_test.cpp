// quern-board, run as a separate process on event files written here.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <caf/actor_system.hpp>

#include "quern/messages.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"
#include "quern/summary/values.hpp"
#include "test_util.hpp"

using namespace quern;
using quern::test::temp_dir;

namespace {

struct run_result {
  int status;
  std::string out; // stdout and stderr, in that order
  std::string err;
};

/// Runs quern-board with `args` (behind `prefix`, a command that runs it).
run_result board(const std::string& args, const std::string& scratch,
                 const std::string& prefix = "") {
  auto err_file = scratch + "/stderr.txt";
  auto cmd = prefix + QUERN_BOARD_PATH + " " + args + " 2>" + err_file;
  run_result r;
  auto* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0)
    r.out.append(buf, n);
  auto st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = test::read_file(err_file);
  return r;
}

/// logdir/a: loss at steps 0..4 (values 10, 9, ... 6) and a histogram;
/// logdir/b/c: acc at steps 1, 2 and a text summary.
void write_runs(const std::string& logdir) {
  std::filesystem::create_directories(logdir + "/a");
  std::filesystem::create_directories(logdir + "/b/c");
  event_file_writer a;
  REQUIRE(
      !a.create_at(logdir + "/a/events.out.tfevents.1700000000.host", 1700000000, false));
  for (int step = 0; step < 5; ++step)
    a.append(scalar_event{1700000000.0 + step, step, "loss", 10.0f - step});
  summary_event h;
  h.step = 4;
  h.wall_time = 1700000010.0;
  test::values_of(h).push_back(histogram_value("weights", {1, 2, 3}));
  a.append(h);
  REQUIRE(!a.close(false));
  event_file_writer b;
  REQUIRE(!b.create_at(logdir + "/b/c/events.out.tfevents.1700000000.host.1", 1700000000,
                       false));
  b.append(scalar_event{1700000001.25, 1, "acc", 0.5f});
  b.append(scalar_event{1700000002.5, 2, "acc", 0.75f});
  summary_event t;
  t.step = 2;
  test::values_of(t).push_back(text_value("note", "hello"));
  b.append(t);
  REQUIRE(!b.close(false));
}

} // namespace

TEST_CASE("quern-board export prints the scalars as csv and json", "[board]") {
  temp_dir dir;
  write_runs(dir / "logs");
  auto csv = board("export " + (dir / "logs"), dir.path());
  CHECK(csv.status == 0);
  CHECK(csv.err.empty());
  CHECK(csv.out == "run,tag,step,wall_time,value\n"
                   "a,loss,0,1700000000,10\n"
                   "a,loss,1,1700000001,9\n"
                   "a,loss,2,1700000002,8\n"
                   "a,loss,3,1700000003,7\n"
                   "a,loss,4,1700000004,6\n"
                   "b/c,acc,1,1700000001.25,0.5\n"
                   "b/c,acc,2,1700000002.5,0.75\n");
  auto json = board("export " + (dir / "logs") + " --tag acc --format json", dir.path());
  CHECK(json.status == 0);
  CHECK(json.out == "[\n"
                    "  {\"run\": \"b/c\", \"tag\": \"acc\", \"step\": 1, \"wall_time\": "
                    "1700000001.25, \"value\": 0.5},\n"
                    "  {\"run\": \"b/c\", \"tag\": \"acc\", \"step\": 2, \"wall_time\": "
                    "1700000002.5, \"value\": 0.75}\n"
                    "]\n");
}

TEST_CASE("quern-board inspect lists runs, tags, counts, steps and values", "[board]") {
  temp_dir dir;
  write_runs(dir / "logs");
  auto r = board("inspect " + (dir / "logs"), dir.path());
  CHECK(r.status == 0);
  INFO(r.out);
  CHECK(r.out.find("Run: a\n") != std::string::npos);
  CHECK(r.out.find("Run: b/c\n") != std::string::npos);
  CHECK(r.out.find("7 records, brain.Event:2") != std::string::npos);
  CHECK(
      r.out.find("    loss  events 5  steps 0..4  first 10 (step 0)  last 6 (step 4)") !=
      std::string::npos);
  CHECK(r.out.find("  histograms\n    weights  events 1  steps 4..4") !=
        std::string::npos);
  CHECK(r.out.find("  text\n    note  events 1  steps 2..2") != std::string::npos);
  CHECK(r.out.find(
            "    acc  events 2  steps 1..2  first 0.5 (step 1)  last 0.75 (step 2)") !=
        std::string::npos);
}

TEST_CASE("TB-2 SW-46 quern-board drops the points a restart orphaned and says how many",
          "[board][TB-2][SW-46]") {
  // A job logs steps 0..149, is restored from its checkpoint at step 100
  // (a new writer, a new event file) and logs 100..179: the board shows
  // 0..179 once each.
  temp_dir dir;
  auto logdir = dir / "logs";
  {
    config cfg;
    caf::actor_system sys{cfg};
    double now = 1700000000;
    summary_writer_options opts;
    opts.logdir = logdir + "/train";
    opts.sync = false;
    opts.clock = [&now] { return now; };
    {
      summary_writer first{sys, opts};
      for (int step = 0; step < 150; ++step, now += 1)
        first.scalar("loss", 100 - step, step);
    }
    now += 100;
    summary_writer restored{sys, opts};
    restored.restarted_at(100);
    for (int step = 100; step < 180; ++step, now += 1)
      restored.scalar("loss", 1000 + step, step);
  }
  auto r = board("inspect " + logdir, dir.path());
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("    loss  events 180  steps 0..179  first 100 (step 0)  last 1179 "
                   "(step 179)\n") != std::string::npos);
  CHECK(r.out.find("  sessionlog:start  events 1\n  purged 50 points: restarted at step "
                   "100\n") != std::string::npos);
  auto csv = board("export " + logdir, dir.path());
  CHECK(csv.status == 0);
  std::istringstream rows(csv.out);
  std::string line;
  std::getline(rows, line);
  int64_t want = 0;
  while (std::getline(rows, line)) {
    auto step = std::stoll(line.substr(std::string("train,loss,").size()));
    CHECK(step == want++);
    if (step == 99)
      CHECK(line.find(",1\n") == std::string::npos);
  }
  CHECK(want == 180);
  CHECK(csv.out.find("train,loss,99,1700000099,1\n") != std::string::npos);
  CHECK(csv.out.find("train,loss,100,1700000250,1100\n") != std::string::npos);
  // --purge-orphaned=false keeps them: 230 points, steps going back once.
  auto kept = board("inspect " + logdir + " --purge-orphaned=false", dir.path());
  CHECK(kept.status == 0);
  CHECK(kept.out.find("    loss  events 230  steps 0..179") != std::string::npos);
  CHECK(kept.out.find("out-of-order steps 1") != std::string::npos);
  CHECK(kept.out.find("purged") == std::string::npos);
  auto all =
      board("export " + logdir + " --purge-orphaned=false --format json", dir.path());
  CHECK(all.status == 0);
  size_t n = 0;
  for (size_t at = all.out.find("\"step\""); at != std::string::npos;
       at = all.out.find("\"step\"", at + 1))
    ++n;
  CHECK(n == 230);
  auto html = board("html " + logdir + " -o - --purge-orphaned=false", dir.path());
  CHECK(html.status == 0);
  CHECK(html.out.find("purged 50 points") == std::string::npos);
  auto page = board("html " + logdir + " -o -", dir.path());
  CHECK(page.out.find("\"purged\":[\"purged 50 points: restarted at step 100\"]") !=
        std::string::npos);
  // A value that is not a bool is named.
  auto bad = board("inspect " + logdir + " --purge-orphaned=maybe", dir.path());
  CHECK(bad.status == 1);
  CHECK(bad.err.find("purge-orphaned") != std::string::npos);
}

TEST_CASE("quern-board reports a damaged file after printing what was readable",
          "[board][SW-22]") {
  temp_dir dir;
  write_runs(dir / "logs");
  auto path = dir / "logs/a/events.out.tfevents.1700000000.host";
  auto bytes = test::read_file(path);
  // Cut the record of the fourth scalar (record 4) inside its payload.
  auto offsets = read_event_file(path).offsets;
  REQUIRE(offsets.size() == 7);
  auto cut = offsets[4];
  test::write_file(path, bytes.substr(0, cut + 20));
  auto r = board("export " + (dir / "logs") + " --tag loss", dir.path());
  CHECK(r.status == 2);
  CHECK(r.out == "run,tag,step,wall_time,value\n"
                 "a,loss,0,1700000000,10\n"
                 "a,loss,1,1700000001,9\n"
                 "a,loss,2,1700000002,8\n");
  CHECK(r.err == "quern-board: " + path + ": DataLoss: truncated record at " +
                     std::to_string(cut + 12) + " (4 records read before it)\n");
  auto bad = bytes;
  bad[40 + 20] ^= 0x10;
  test::write_file(path, bad);
  auto i = board("inspect " + (dir / "logs"), dir.path());
  CHECK(i.status == 2);
  CHECK(i.out.find("DAMAGED: DataLoss: corrupted record at 52") != std::string::npos);
  CHECK(i.err.find("corrupted record at 52 (1 record read before it)") !=
        std::string::npos);
}

TEST_CASE("quern-board refuses bad input with a clear message and exit 1", "[board]") {
  temp_dir dir;
  auto none = board("export " + (dir / "missing"), dir.path());
  CHECK(none.status == 1);
  CHECK(none.err == "quern-board: cannot read log directory '" + (dir / "missing") +
                        "': No such file or directory\n");
  auto empty = board("inspect " + dir.path(), dir.path());
  CHECK(empty.status == 1);
  CHECK(empty.err.find("no event files") != std::string::npos);
  auto unknown = board("show " + dir.path(), dir.path());
  CHECK(unknown.status == 1);
  CHECK(unknown.err.find("unknown command 'show'") != std::string::npos);
  auto fmt = board("export " + dir.path() + " --format xml", dir.path());
  CHECK(fmt.status == 1);
  CHECK(fmt.err.find("unknown format 'xml'") != std::string::npos);
  auto opt = board("export " + dir.path() + " --bogus", dir.path());
  CHECK(opt.status == 1);
  CHECK(opt.err.find("bogus") != std::string::npos);
  auto help = board("--help", dir.path());
  CHECK(help.status == 0);
  CHECK(help.out.find("quern-board export LOGDIR") != std::string::npos);
}

TEST_CASE("quern-board export quotes awkward tags in csv and json", "[board]") {
  temp_dir dir;
  std::filesystem::create_directories(dir / "logs");
  event_file_writer w;
  REQUIRE(!w.create_at(dir / "logs/events.out.tfevents.1.h", 1, false));
  w.append(scalar_event{2.0, 1, "a,\"b\"", 1.5f});
  w.append(scalar_event{2.0, 2, "tab\there", -0.0f});
  REQUIRE(!w.close(false));
  auto csv = board("export " + (dir / "logs"), dir.path());
  CHECK(csv.status == 0);
  // The run at the log directory's root is named after it.
  CHECK(csv.out == "run,tag,step,wall_time,value\n"
                   "logs,\"a,\"\"b\"\"\",1,2,1.5\n"
                   "logs,tab\there,2,2,-0\n");
  auto json = board("export " + (dir / "logs") + " -f json", dir.path());
  CHECK(json.status == 0);
  CHECK(json.out == "[\n"
                    "  {\"run\": \"logs\", \"tag\": \"a,\\\"b\\\"\", \"step\": 1, "
                    "\"wall_time\": 2, \"value\": 1.5},\n"
                    "  {\"run\": \"logs\", \"tag\": \"tab\\there\", \"step\": 2, "
                    "\"wall_time\": 2, \"value\": -0}\n"
                    "]\n");
  // inspect says so too; "." (TensorBoard's name for it) still selects it;
  // a sub-folder of that name keeps its name and the root run says it is
  // the root.
  auto inspect = board("inspect " + (dir / "logs"), dir.path());
  CHECK(inspect.out.find("\nRun: logs\n") != std::string::npos);
  auto dot = board("export " + (dir / "logs") + " --run .", dir.path());
  CHECK(dot.status == 0);
  CHECK(dot.out == csv.out);
  auto slash = board("export " + (dir / "logs") + "/", dir.path());
  CHECK(slash.out == csv.out);
  std::filesystem::create_directories(dir / "logs/logs");
  event_file_writer sub;
  REQUIRE(!sub.create_at(dir / "logs/logs/events.out.tfevents.3.h", 3, false));
  sub.append(scalar_event{4.0, 1, "x", 1.0f});
  REQUIRE(!sub.close(false));
  auto both = board("export " + (dir / "logs"), dir.path());
  CHECK(both.out == "run,tag,step,wall_time,value\n"
                    "logs (root),\"a,\"\"b\"\"\",1,2,1.5\n"
                    "logs (root),tab\there,2,2,-0\n"
                    "logs,x,1,4,1\n");
}

namespace {

/// Runs quern-board as a user who is subject to file permissions: as root
/// (who reads everything), through setpriv as nobody.
run_result board_unprivileged(const std::string& args, const std::string& scratch) {
  if (::geteuid() != 0)
    return board(args, scratch);
  REQUIRE(std::system("command -v setpriv >/dev/null") == 0);
  return board(args, scratch, "setpriv --reuid=65534 --regid=65534 --clear-groups ");
}

} // namespace

TEST_CASE("quern-board names a folder it may not read instead of skipping it",
          "[board]") {
  namespace fs = std::filesystem;
  temp_dir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read |
                                  fs::perms::others_exec);
  auto logs = dir / "logs";
  write_runs(logs);
  // The whole tree readable by others first, so only the folder made
  // unreadable below stands in the way.
  for (auto& e : fs::recursive_directory_iterator(logs))
    fs::permissions(e.path(), fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add);
  fs::permissions(logs, fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::add);
  auto readable = board_unprivileged("inspect " + logs, dir.path());
  REQUIRE(readable.status == 0); // the setup is readable as that user

  fs::permissions(logs + "/b", fs::perms::none);
  auto sub = board_unprivileged("inspect " + logs, dir.path());
  CHECK(sub.status == 1);
  CHECK(sub.err == "quern-board: cannot read directory '" + logs +
                       "/b' under log directory '" + logs + "': Permission denied\n");

  fs::permissions(logs + "/b",
                  fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(logs, fs::perms::none);
  auto root = board_unprivileged("export " + logs, dir.path());
  CHECK(root.status == 1);
  CHECK(root.err ==
        "quern-board: cannot read log directory '" + logs + "': Permission denied\n");
  fs::permissions(logs, fs::perms::owner_all);
}

TEST_CASE("quern-board export prints wall times exactly and runs by start time",
          "[board]") {
  temp_dir dir;
  auto logs = dir / "logs";
  // "z" starts first, "a" later, "m" has no readable event: TensorBoard's
  // order is z, a, m (by start time, runs without one last).
  std::filesystem::create_directories(logs + "/z");
  std::filesystem::create_directories(logs + "/a");
  std::filesystem::create_directories(logs + "/m");
  event_file_writer z;
  REQUIRE(!z.create_at(logs + "/z/events.out.tfevents.1.h", 1600000000.1, false));
  z.append(scalar_event{1600000000.123456789, 1, "x", 1.0f});
  z.append(scalar_event{0.1, 2, "x", 2.0f});
  REQUIRE(!z.close(false));
  event_file_writer a;
  REQUIRE(!a.create_at(logs + "/a/events.out.tfevents.2.h", 1700000000, false));
  a.append(scalar_event{1700000000.000001, 1, "x", 3.0f});
  REQUIRE(!a.close(false));
  test::write_file(logs + "/m/events.out.tfevents.3.h", "");
  auto csv = board("export " + logs, dir.path());
  CHECK(csv.status == 0);
  CHECK(csv.out == "run,tag,step,wall_time,value\n"
                   "z,x,1,1600000000.1234567,1\n"
                   "z,x,2,0.1,2\n"
                   "a,x,1,1700000000.000001,3\n");
  auto only = board("export " + logs + " --run a", dir.path());
  CHECK(only.out == "run,tag,step,wall_time,value\na,x,1,1700000000.000001,3\n");
  auto unknown = board("export " + logs + " --run nope", dir.path());
  CHECK(unknown.status == 1);
  CHECK(unknown.err.find("no run 'nope'") != std::string::npos);
  auto inspect = board("inspect " + logs, dir.path());
  auto pz = inspect.out.find("Run: z\n"), pa = inspect.out.find("Run: a\n"),
       pm = inspect.out.find("Run: m\n");
  CHECK(pz < pa);
  CHECK(pa < pm);
  CHECK(pm != std::string::npos);
}

TEST_CASE("quern-board has help per command and names a LOGDIR that is a file",
          "[board]") {
  temp_dir dir;
  for (auto cmd : {"inspect", "export", "html", "serve"}) {
    auto help = board(std::string(cmd) + " --help", dir.path());
    CHECK(help.status == 0);
    CHECK(help.out.find(std::string("quern-board ") + cmd + " LOGDIR") !=
          std::string::npos);
  }
  auto html_help = board("html --help", dir.path());
  CHECK(html_help.out.find("--output") != std::string::npos);
  auto serve_help = board("serve --help", dir.path());
  CHECK(serve_help.out.find("--port") != std::string::npos);
  test::write_file(dir / "file", "x");
  for (auto cmd : {"inspect", "export", "html", "serve"}) {
    auto r = board(std::string(cmd) + " " + (dir / "file"), dir.path());
    CHECK(r.status == 1);
    CHECK(r.err == "quern-board: cannot read log directory '" + (dir / "file") +
                       "': Not a directory\n");
  }
  auto none = board("html " + (dir / "missing"), dir.path());
  CHECK(none.status == 1);
  CHECK(none.err.find("No such file or directory") != std::string::npos);
  std::filesystem::create_directories(dir / "empty");
  // An empty log directory is refused by the commands that read it once
  // (serve starts on it: see "quern-board serve starts on an empty ...").
  for (auto cmd : {"inspect", "export", "html"}) {
    auto empty = board(std::string(cmd) + " " + (dir / "empty"), dir.path());
    CHECK(empty.status == 1);
    CHECK(empty.err.find("no event files") != std::string::npos);
  }
  auto port = board("serve " + (dir / "empty") + " --port 70000", dir.path());
  CHECK(port.status == 1);
  CHECK(port.err.find("not a TCP port") != std::string::npos);
  auto nocmd = board("", dir.path());
  CHECK(nocmd.status == 1);
  CHECK(nocmd.err.find("missing command") != std::string::npos);
}

TEST_CASE("quern-board html writes the same page twice, into LOGDIR by default",
          "[board]") {
  temp_dir dir;
  write_runs(dir / "logs");
  auto first = board("html " + (dir / "logs"), dir.path());
  CHECK(first.status == 0);
  CHECK(first.out.find("wrote " + (dir / "logs/index.html")) != std::string::npos);
  auto page = test::read_file(dir / "logs/index.html");
  auto second = board("html " + (dir / "logs") + " -o -", dir.path());
  CHECK(second.status == 0);
  CHECK(second.out == page);
  CHECK(page.find("<!DOCTYPE html>") == 0);
  CHECK(page.find("default-src 'none'") != std::string::npos);
  CHECK(page.find("\"name\":\"b/c\"") != std::string::npos);
}

TEST_CASE("quern-board html names the file it cannot write", "[board]") {
  temp_dir dir;
  write_runs(dir / "logs");
  auto r = board("html " + (dir / "logs") + " -o " + (dir / "no/such/dir/page.html"),
                 dir.path());
  CHECK(r.status == 1);
  CHECK(r.err == "quern-board: cannot write '" + (dir / "no/such/dir/page.html") +
                     "': No such file or directory\n");
}

TEST_CASE("quern-board html never writes through a link planted beside the page",
          "[board]") {
  namespace fs = std::filesystem;
  temp_dir dir;
  write_runs(dir / "logs");
  // Someone who may write in a shared LOGDIR points the names the page was
  // once written through at a file of the user's.
  test::write_file(dir / "victim", "precious\n");
  fs::create_symlink(dir / "victim", dir / "logs/index.html.tmp");
  auto r = board("html " + (dir / "logs"), dir.path());
  CHECK(r.status == 0);
  CHECK(test::read_file(dir / "victim") == "precious\n");
  CHECK(test::read_file(dir / "logs/index.html").find("<!DOCTYPE html>") == 0);
  CHECK(fs::is_symlink(dir / "logs/index.html.tmp"));
  // A link at the page's own name is replaced, not followed.
  fs::remove(dir / "logs/index.html");
  fs::create_symlink(dir / "victim", dir / "logs/index.html");
  auto again = board("html " + (dir / "logs"), dir.path());
  CHECK(again.status == 0);
  CHECK(test::read_file(dir / "victim") == "precious\n");
  CHECK_FALSE(fs::is_symlink(dir / "logs/index.html"));
  // Nothing is left beside it.
  size_t left = 0;
  for (auto& e : fs::directory_iterator(dir / "logs"))
    left += e.path().filename().string().find("index.html.tmp.") == 0;
  CHECK(left == 0);
}

namespace {

/// `quern-board serve` started in the background (behind `shell`, shell
/// commands run before it), on a free port.
struct served_board {
  pid_t pid = -1;
  int port = 0;
  std::FILE* out = nullptr;

  served_board(const std::string& args, const std::string& shell = "") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      auto cmd = shell + "exec " + QUERN_BOARD_PATH + " serve " + args + " --port 0";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
    char line[512] = {};
    REQUIRE(std::fgets(line, sizeof line, out) != nullptr);
    std::string first = line;
    auto colon = first.find("127.0.0.1:");
    REQUIRE(colon != std::string::npos);
    port = std::stoi(first.substr(colon + 10));
  }
  ~served_board() {
    ::kill(pid, SIGTERM);
    int st = 0;
    ::waitpid(pid, &st, 0);
    std::fclose(out);
  }
  /// User and system CPU time so far, in clock ticks.
  long cpu_ticks() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string f;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14)
        utime = std::stol(f);
      if (i == 15)
        stime = std::stol(f);
    }
    return utime + stime;
  }
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// GET `target`: the whole answer (status line, headers, body), or "" when
/// the connection failed.
std::string http_get(int port, const std::string& target) {
  int fd = connect_to(port);
  if (fd < 0)
    return "";
  auto req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return "";
  }
  std::string answer;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

} // namespace

TEST_CASE("quern-board serve starts on an empty or missing log directory and serves "
          "runs written later",
          "[board]") {
  temp_dir dir;
  std::filesystem::create_directories(dir / "empty");
  for (auto logdir : {dir / "empty", dir / "missing"}) {
    served_board srv(logdir);
    auto first = http_get(srv.port, "/data");
    CHECK(first.find("HTTP/1.1 200") == 0);
    CHECK(first.find("\"runs\":[]") != std::string::npos);
    CHECK(http_get(srv.port, "/").find("HTTP/1.1 200") == 0);
    std::filesystem::create_directories(logdir + "/run");
    event_file_writer w;
    REQUIRE(!w.create_at(logdir + "/run/events.out.tfevents.1.h", 1, false));
    w.append(scalar_event{2.0, 1, "loss", 0.5f});
    REQUIRE(!w.close(false));
    // Scans are at most a second apart (not a timing assertion: bounded
    // polling for what must come).
    std::string later;
    for (int i = 0; i < 100 && later.find("\"name\":\"run\"") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      later = http_get(srv.port, "/data");
    }
    CHECK(later.find("\"name\":\"run\"") != std::string::npos);
    auto json = http_get(srv.port, "/export.json?run=run&tag=loss");
    CHECK(json.find("application/json") != std::string::npos);
    CHECK(
        json.find("{\"run\": \"run\", \"tag\": \"loss\", \"step\": 1, \"wall_time\": 2, "
                  "\"value\": 0.5}") != std::string::npos);
  }
}

TEST_CASE("quern-board serve at its descriptor limit waits instead of spinning",
          "[board]") {
  temp_dir dir;
  write_runs(dir / "logs");
  served_board srv(dir / "logs", "ulimit -n 24; ");
  REQUIRE(http_get(srv.port, "/data").find("HTTP/1.1 200 OK") == 0);
  // Far more connections than the server may open: the ones it cannot
  // accept wait in the listen queue, and accept fails with EMFILE.
  std::vector<int> conns;
  for (int i = 0; i < 60; ++i) {
    int fd = connect_to(srv.port);
    if (fd >= 0)
      conns.push_back(fd);
  }
  REQUIRE(conns.size() > 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto before = srv.cpu_ticks();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto used = srv.cpu_ticks() - before;
  // Spinning on accept burns the whole 2 s (200 ticks); waiting, almost none.
  CHECK(used < ::sysconf(_SC_CLK_TCK) / 2);
  for (int fd : conns)
    ::close(fd);
  // The server is still there and answers.
  std::string answer;
  for (int i = 0; i < 50 && answer.find("HTTP/1.1 200 OK") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answer = http_get(srv.port, "/data");
  }
  CHECK(answer.find("HTTP/1.1 200 OK") == 0);
}
