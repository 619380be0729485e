// give_back takes back only rows the queue handed to the client that gives
// them back: a counter per client actor of the rows answered to its
// dequeues and pulls, less those it gave back. The excess is refused on
// stderr, naming the queue and the counts, and the queue keeps serving.

#include <iostream>
#include <mutex>
#include <sstream>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

/// What the queue writes to std::cerr while it lives (read after a barrier
/// of the queue, whose handler wrote it before answering).
class captured_stderr {
public:
  captured_stderr() : old_(std::cerr.rdbuf(out_.rdbuf())) {}
  ~captured_stderr() { std::cerr.rdbuf(old_); }
  std::string text() const { return out_.str(); }

private:
  std::ostringstream out_;
  std::streambuf* old_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<element> rows_from(int64_t first, size_t n) {
  std::vector<element> rows;
  for (size_t i = 0; i < n; ++i)
    rows.push_back(i64(first + static_cast<int64_t>(i)));
  return rows;
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "Q-82 give_back of rows the client never took is refused, and the "
                 "size stays",
                 "[Q-82][give_back]") {
  auto q = int_fifo(sys, 100, "capped");
  probe p{sys, q};
  for (int64_t i = 0; i < 5; ++i)
    p.enqueue(i64(i));
  for (int i = 0; i < 5; ++i)
    CHECK(p.next().count() == 1);
  captured_stderr err;
  p.send(give_back_atom::value, rows_from(1000, 1000));
  CHECK(p.size() == 5); // nothing went in: not past the capacity of 100
  CHECK(contains(err.text(), "quern: " + p.name() +
                                 " refused 1000 of 1000 rows given back by a client it "
                                 "had handed only 0 rows not given back yet"));
  // An anonymous sender was handed nothing either.
  caf::anon_send(q, give_back_atom::value, rows_from(2000, 3));
  CHECK(p.size() == 5);
  CHECK(contains(err.text(), "refused 3 of 3 rows given back by an anonymous sender"));
  CHECK(dequeue_values(p, 5) == std::vector<int64_t>{0, 1, 2, 3, 4});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-82 a client gives back at most what it was handed: the first rows "
                 "go back, the rest is refused",
                 "[Q-82][give_back]") {
  auto q = int_fifo(sys, 100, "handed");
  probe p{sys, q};
  for (int64_t i = 0; i < 6; ++i)
    p.enqueue(i64(i));
  for (int i = 0; i < 6; ++i)
    CHECK(p.next().count() == 1);
  // Handed: 1 row (dequeue) and 2 (dequeue_many), 3 in all.
  CHECK(dequeue_values(p, 1) == std::vector<int64_t>{0});
  p.dequeue_many(2);
  CHECK(values_of(p.next().elem()) == std::vector<int64_t>{1, 2});
  captured_stderr err;
  p.send(give_back_atom::value, std::vector<element>{i64(0), i64(1), i64(2), i64(7)});
  CHECK(p.size() == 6); // 0, 1, 2 back in front of 3, 4, 5
  CHECK(contains(err.text(), "quern: " + p.name() +
                                 " refused 1 of 4 rows given back by a client it had "
                                 "handed only 3 rows not given back yet"));
  // What went back no longer counts.
  p.send(give_back_atom::value, std::vector<element>{i64(9)});
  CHECK(p.size() == 6);
  CHECK(contains(err.text(), "refused 1 of 1 rows given back by a client it had "
                             "handed only 0 rows"));
  // Rows a pull brought count too, and each client has its own count.
  demand d;
  d.n = 2;
  d.cut = batch_cut::any_size;
  d.as_rows = true;
  p.send(pull_atom::value, d);
  p.self()->receive(
      [&](pulled_atom, std::vector<element>& xs, caf::error& end) {
        CHECK(!end);
        CHECK(values_of(xs) == std::vector<int64_t>{0, 1});
      },
      caf::after(std::chrono::seconds(30)) >> [] { FAIL("no pulled within 30 s"); });
  probe other{sys, q};
  other.send(give_back_atom::value, rows_from(50, 2));
  CHECK(other.size() == 4);
  p.send(give_back_atom::value, std::vector<element>{i64(0), i64(1)});
  CHECK(p.size() == 6);
  CHECK(dequeue_values(p, 6) == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
}
