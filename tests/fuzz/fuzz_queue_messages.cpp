// Fuzz target: a queue actor's message handling (quern/interfaces.hpp,
// quern/queue.hpp), checked against a model after every operation.
//
// Each input builds one queue from its first bytes -- the kind (FIFO,
// random-shuffle with a fixed seed, padding FIFO, priority), one or two
// components of any dtype and of rank 0 to 2 (shapes given or not; unknown
// dimensions for padding), a capacity, min_after_dequeue -- and then runs a
// sequence of operations decoded from the rest: enqueue (of a row that fits,
// or of one that does not), enqueue_many of 0 to 4 rows, dequeue,
// dequeue_many and dequeue_up_to of -1 to 4 rows, pulls (demands cut any, as rows or one
// batch) of 0 to 3 rows, give_back of rows (some that do not fit), push, unpull, close
// with and without cancel, and keyed enqueues of two producers (new batches, retries
// that store only what the queue lacks, stale and older requests refused). One actor
// system serves every input; a scoped_actor sends each operation one-way, so every answer
// comes back as an ordinary message, in the order the queue produced it. Enqueues and
// dequeues carry timeout 0 (an attempt that cannot complete at once is answered
// deadline_exceeded by the queue, Q-80), and every receive gives up after 10 s: a lost
// answer is reported, never waited for.
//
// The model mirrors the pending-attempt rules (docs/semantics.md Q-10..Q-81):
// the stored rows (exact order for FIFO and padding; a multiset for shuffle;
// smallest priority first for priority), the closed flag, and the pulls still
// waiting. Promises checked after every step (a broken one traps):
// - every answer is the one the model predicts: the rows (a dequeued row is
//   the next one, or one of those stored; batches padded as Q-62 says), the
//   count stored, or the error class (and text where it names no queue):
//   invalid_argument for rows that do not fit, cancelled for an
//   enqueue on a closed queue, out_of_range for a dequeue on a
//   closed queue without enough rows, deadline_exceeded for an
//   attempt that has to wait, cancelled for pulls withdrawn by unpull;
// - size() is the model's after every step: no row is lost or duplicated,
//   a timed-out dequeue_many loses nothing, rows stored by a partly
//   served enqueue_many stay;
// - give_back puts the rows that fit back (FIFO: in front, in order), up to
//   the rows the client was handed and did not give back, and refuses the
//   others while the queue keeps serving;
// - at the end, closed with cancel, the queue hands out exactly the rows the
//   model holds.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/error.hpp"
#include "quern/interfaces.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"

#define QUERN_FUZZ_TARGET "fuzz_queue_messages"
#include "fuzz_support.hpp"

namespace {

using namespace quern;

constexpr auto answer_bound = std::chrono::seconds(10);
constexpr caf::timespan no_wait{0};

using quern::fuzz::input;

// -- rows -------------------------------------------------------------------------

const dtype all_dtypes[] = {dtype::float32, dtype::float64, dtype::int32,  dtype::uint8,
                            dtype::string,  dtype::int64,   dtype::boolean};

/// A tensor of `type` and `shape` whose values come from `seed`.
tensor make_tensor(dtype type, const tensor_shape& shape, int64_t seed) {
  auto n = static_cast<size_t>(shape.num_elements());
  auto value = [&](size_t j) { return seed * 7 + static_cast<int64_t>(j); };
  switch (type) {
  case dtype::float32: {
    std::vector<float> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = static_cast<float>(value(j)) / 2;
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::float64: {
    std::vector<double> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = static_cast<double>(value(j)) / 4;
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::int32: {
    std::vector<int32_t> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = static_cast<int32_t>(value(j));
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::uint8: {
    std::vector<uint8_t> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = static_cast<uint8_t>(value(j));
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::string: {
    std::vector<std::string> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = "r" + std::to_string(value(j));
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::int64: {
    std::vector<int64_t> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = value(j);
    return tensor::from_values(shape, std::move(v));
  }
  case dtype::boolean: {
    std::vector<bool> v(n);
    for (size_t j = 0; j < n; ++j)
      v[j] = value(j) % 2 == 1;
    return tensor::from_values(shape, std::move(v));
  }
  }
  return tensor{};
}

/// The queue under test and how its rows look.
struct queue_under_test {
  queue_kind kind = queue_kind::fifo;
  int32_t capacity = 1;
  int32_t min_after_dequeue = 0;
  bool shapes_given = false;
  std::vector<dtype> dtypes;        // without the priority
  std::vector<tensor_shape> shapes; // without the priority; empty if not given
  queue_spec spec;                  // as the queue reports it
  queue_actor handle;
};

/// The shapes of one row (or of every row of a batch): the queue's shapes
/// with each unknown dimension chosen, or any shapes when none are given.
std::vector<tensor_shape> row_shapes(const queue_under_test& q, input& in) {
  std::vector<tensor_shape> out;
  for (size_t i = 0; i < q.dtypes.size(); ++i) {
    std::vector<int64_t> dims;
    if (q.shapes_given) {
      for (auto d : q.shapes[i].dims())
        dims.push_back(d >= 0 ? d : in.u8() % 3);
    } else {
      size_t rank = in.u8() % 3u;
      for (size_t k = 0; k < rank; ++k)
        dims.push_back(in.u8() % 3);
    }
    out.emplace_back(std::move(dims));
  }
  return out;
}

/// Rows differ from each other: each takes the next seed.
struct row_maker {
  int64_t next_seed = 1;

  element row(const queue_under_test& q, const std::vector<tensor_shape>& shapes,
              input& in) {
    element e;
    auto seed = next_seed++;
    if (q.kind == queue_kind::priority)
      e.components.push_back(tensor::scalar(int64_t{static_cast<int8_t>(in.u8()) % 5}));
    for (size_t i = 0; i < q.dtypes.size(); ++i)
      e.components.push_back(make_tensor(q.dtypes[i], shapes[i], seed));
    return e;
  }

  element row(const queue_under_test& q, input& in) {
    return row(q, row_shapes(q, in), in);
  }

  /// A row the queue must refuse: a component too many, a wrong dtype,
  /// or (with shapes) a component of another rank.
  element bad_row(const queue_under_test& q, input& in) {
    auto e = row(q, in);
    switch (in.u8() % 3) {
    case 0:
      e.components.push_back(tensor::scalar(int64_t{1}));
      break;
    case 1: {
      auto& c = e.components.back();
      auto other = c.type() == dtype::int32 ? dtype::int64 : dtype::int32;
      c = make_tensor(other, c.shape(), 0);
      break;
    }
    default: {
      auto& c = e.components.back();
      if (q.shapes_given) {
        c = make_tensor(c.type(), c.shape().with_leading(1), 0);
      } else {
        e.components.pop_back();
        if (e.components.empty())
          e.components.push_back(tensor::scalar(std::string("x")));
        // One component too few, or (one-component non-priority queue) a
        // string where the dtype is not string.
        if (e.components.size() == q.spec.num_components() &&
            e.components.back().type() == q.spec.dtypes.back())
          e.components.push_back(tensor::scalar(true));
      }
    }
    }
    return e;
  }
};

// -- the model ---------------------------------------------------------------------

struct pending_pull {
  int32_t n;
  bool batch;
};

class model {
public:
  explicit model(const queue_under_test& q) : q_(q) {}

  bool closed = false;
  std::vector<element> rows; // FIFO/padding: front first; others: unordered
  std::deque<pending_pull> pulls;
  /// Rows handed to the client and not given back: the most it may give
  /// back (the queue refuses the rest).
  size_t handed = 0;

  size_t size() const { return rows.size(); }

  /// Rows a dequeue may take now.
  size_t available() const {
    if (q_.kind == queue_kind::random_shuffle && !closed) {
      auto keep = static_cast<size_t>(q_.min_after_dequeue);
      return rows.size() > keep ? rows.size() - keep : 0;
    }
    return rows.size();
  }

  size_t room() const {
    auto cap = static_cast<size_t>(q_.spec.capacity);
    return rows.size() < cap ? cap - rows.size() : 0;
  }

  /// Stores a row (at the back).
  void store(element e) { rows.push_back(std::move(e)); }

  /// Rows given back: FIFO and padding put them in front, in order.
  void put_back(std::vector<element> back) {
    if (q_.kind == queue_kind::fifo || q_.kind == queue_kind::padding_fifo)
      rows.insert(rows.begin(), back.begin(), back.end());
    else
      rows.insert(rows.end(), back.begin(), back.end());
  }

  /// Takes the rows `got` that the queue handed out, checking that they are
  /// the ones it may hand out: the first ones (FIFO, padding), stored ones
  /// (shuffle), the smallest priorities in ascending order (priority).
  void take(const std::vector<element>& got) {
    PROMISE(got.size() <= rows.size());
    handed += got.size();
    switch (q_.kind) {
    case queue_kind::fifo:
    case queue_kind::padding_fifo:
      for (size_t i = 0; i < got.size(); ++i)
        PROMISE(got[i] == rows[i]);
      rows.erase(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(got.size()));
      return;
    case queue_kind::random_shuffle:
      for (auto& g : got) {
        auto i = std::find(rows.begin(), rows.end(), g);
        PROMISE(i != rows.end());
        rows.erase(i);
      }
      return;
    case queue_kind::priority:
      for (auto& g : got) {
        auto i = std::find(rows.begin(), rows.end(), g);
        PROMISE(i != rows.end());
        auto p = priority(g);
        for (auto& r : rows)
          PROMISE(priority(r) >= p);
        rows.erase(i);
      }
      return;
    }
  }

  static int64_t priority(const element& e) {
    return e.components.at(0).scalar_value<int64_t>();
  }

private:
  const queue_under_test& q_;
};

/// The batch of `rows` as dequeue_many builds it: per component, each
/// unknown dimension the largest of the batch (0 for none), rows padded with
/// zeros, stacked.
element expected_batch(const queue_spec& spec, const std::vector<element>& rows) {
  element batch;
  for (size_t i = 0; i < spec.num_components(); ++i) {
    auto dims = spec.shapes[i].dims();
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] >= 0)
        continue;
      int64_t m = 0;
      for (auto& r : rows)
        m = std::max(m, r.components[i].shape().dim(d));
      dims[d] = m;
    }
    tensor_shape row_shape{dims};
    std::vector<tensor> column;
    for (auto& r : rows)
      column.push_back(r.components[i].padded_to(row_shape));
    batch.components.push_back(tensor::stack_or_empty(column, spec.dtypes[i], row_shape));
  }
  return batch;
}

/// The rows of a batch (its leading dimension), unpadded back where padding
/// could have changed them: for the model, rows are compared as the batch
/// holds them, so padding queues compare against expected_batch instead.
std::vector<element> rows_of(const element& batch, size_t n) {
  std::vector<element> out;
  for (size_t k = 0; k < n; ++k)
    out.push_back(batch.row(static_cast<int64_t>(k)));
  return out;
}

// -- answers ------------------------------------------------------------------------

/// An answer of the queue, as it arrived.
struct answer {
  enum class kind { count, elem, flag, error, pulled, pushed };
  kind what = kind::error;
  int32_t count = 0;
  bool flag = false;
  element elem;
  std::vector<element> rows;
  caf::error err;
};

class client {
public:
  explicit client(queue_actor q) : self_(quern::fuzz::system()), q_(std::move(q)) {}

  template <class... Ts>
  void send(Ts&&... xs) {
    self_->send(q_, std::forward<Ts>(xs)...);
  }
  /// Through the queue's keyed extension (keyed_enqueue_actor).
  template <class... Ts>
  void send_keyed(Ts&&... xs) {
    self_->send(caf::actor_cast<keyed_enqueue_actor>(q_), std::forward<Ts>(xs)...);
  }

  /// The next answer, waiting at most answer_bound.
  answer next() {
    answer a;
    bool got = false;
    self_->receive(
        [&](int32_t x) {
          a.what = answer::kind::count;
          a.count = x;
          got = true;
        },
        [&](element& e) {
          a.what = answer::kind::elem;
          a.elem = std::move(e);
          got = true;
        },
        [&](bool b) {
          a.what = answer::kind::flag;
          a.flag = b;
          got = true;
        },
        [&](caf::error& e) {
          a.what = answer::kind::error;
          a.err = std::move(e);
          got = true;
        },
        [&](pulled_atom, std::vector<element>& xs, caf::error& e) {
          a.what = answer::kind::pulled;
          a.rows = std::move(xs);
          a.err = std::move(e);
          got = true;
        },
        [&](pushed_atom, int32_t stored, caf::error& e) {
          a.what = answer::kind::pushed;
          a.count = stored;
          a.err = std::move(e);
          got = true;
        },
        caf::after(answer_bound) >> [&] { got = false; });
    if (!got)
      quern::fuzz::broken("no answer from the queue within 10 s (a lost reply)",
                          __LINE__);
    return a;
  }

  /// Answers that are not replies to a request (pulled, pushed) are kept
  /// here in arrival order until the model asks for them.
  answer reply() {
    for (;;) {
      auto a = next();
      if (a.what == answer::kind::pulled || a.what == answer::kind::pushed)
        streamed_.push_back(std::move(a));
      else
        return a;
    }
  }

  /// size(): a barrier too. Every answer the queue produced before it is
  /// here afterwards.
  int32_t size() {
    send(size_atom::value);
    auto a = reply();
    PROMISE(a.what == answer::kind::count);
    return a.count;
  }

  bool is_closed() {
    send(is_closed_atom::value);
    auto a = reply();
    PROMISE(a.what == answer::kind::flag);
    return a.flag;
  }

  /// The next streamed answer (call after a barrier).
  std::optional<answer> streamed() {
    if (streamed_.empty())
      return std::nullopt;
    auto a = std::move(streamed_.front());
    streamed_.pop_front();
    return a;
  }

  caf::scoped_actor& self() { return self_; }

private:
  caf::scoped_actor self_;
  queue_actor q_;
  std::deque<answer> streamed_;
};

bool has_code(const caf::error& e, error_code c) {
  return e && e.category() == error_category && is(e, c);
}

// -- the driver ----------------------------------------------------------------------

class driver {
public:
  driver(queue_under_test& q, input& in) : q_(q), in_(in), m_(q), c_(q.handle) {}

  void run() {
    for (int step = 0; step < 48 && !in_.done(); ++step) {
      one_step();
      // Barrier: everything this step caused has arrived.
      PROMISE(c_.size() == static_cast<int32_t>(m_.size()));
      check_streamed_none_left();
    }
    finish();
  }

private:
  std::string kind_name(bool for_enqueue) const {
    auto k = q_.kind;
    if (for_enqueue && k == queue_kind::padding_fifo)
      k = queue_kind::fifo;
    return std::string(queue_kind_name(k)) + " '" + q_.spec.resource_name + "'";
  }

  caf::error insufficient(bool single, int64_t requested, size_t current) const {
    return make_error(error_code::out_of_range,
                      kind_name(single) +
                          " is closed and has insufficient elements (requested " +
                          std::to_string(requested) + ", current size " +
                          std::to_string(current) + ")");
  }

  static void same_error(const caf::error& got, const caf::error& want) {
    PROMISE(got);
    PROMISE(got.category() == error_category);
    PROMISE(code_of(got) == code_of(want));
    PROMISE(message_of(got) == message_of(want));
  }

  void expect_error(const answer& a, error_code code) {
    PROMISE(a.what == answer::kind::error);
    PROMISE(has_code(a.err, code));
    PROMISE(!message_of(a.err).empty());
  }

  void expect_error(const answer& a, const caf::error& want) {
    PROMISE(a.what == answer::kind::error);
    same_error(a.err, want);
  }

  /// Serves the pending pulls, as a flush does after rows arrived or the
  /// queue closed: each one in order while rows are available, then, once
  /// closed, out_of_range for the rest.
  void serve_pulls() {
    while (!m_.pulls.empty()) {
      auto p = m_.pulls.front();
      auto avail = m_.available();
      if (avail == 0 && !m_.closed)
        return;
      m_.pulls.pop_front();
      auto a = c_.streamed();
      if (!a) {
        // The answer is sent before the queue answers the barrier that
        // follows; wait for that barrier if it has not come yet.
        c_.size();
        a = c_.streamed();
      }
      PROMISE(a.has_value());
      if (avail == 0) {
        PROMISE(a->what == answer::kind::pulled && a->rows.empty());
        same_error(a->err, insufficient(true, 1, m_.size()));
        continue;
      }
      auto k = std::min(avail, static_cast<size_t>(p.n));
      PROMISE(!a->err);
      PROMISE(a->what == answer::kind::pulled);
      if (p.batch) {
        PROMISE(a->rows.size() == 1);
        check_batch(a->rows.front(), k);
      } else {
        PROMISE(a->rows.size() == k);
        m_.take(a->rows);
      }
    }
  }

  /// A batch of k rows handed out: the next ones (FIFO, padding, checked
  /// with padding), or stored ones (shuffle, priority); taken from the model.
  void check_batch(const element& batch, size_t k) {
    PROMISE(batch.size() == q_.spec.num_components());
    for (auto& c : batch.components) {
      PROMISE(c.shape().rank() >= 1);
      PROMISE(c.dim0() == static_cast<int64_t>(k));
    }
    if (q_.kind == queue_kind::fifo || q_.kind == queue_kind::padding_fifo) {
      std::vector<element> next(m_.rows.begin(),
                                m_.rows.begin() + static_cast<ptrdiff_t>(k));
      PROMISE(batch == expected_batch(q_.spec, next));
      m_.take(next);
      return;
    }
    auto rows = rows_of(batch, k);
    m_.take(rows);
    if (q_.kind == queue_kind::priority)
      for (size_t i = 1; i < rows.size(); ++i)
        PROMISE(model::priority(rows[i - 1]) <= model::priority(rows[i]));
  }

  /// Stores rows of an enqueue attempt while there is room, serving pulls
  /// between (a flush). Returns how many were stored.
  size_t store_rows(const std::vector<element>& rows) {
    size_t stored = 0;
    for (;;) {
      auto k = std::min(rows.size() - stored, m_.room());
      for (size_t i = 0; i < k; ++i)
        m_.store(rows[stored + i]);
      stored += k;
      auto before = m_.pulls.size();
      serve_pulls();
      if (stored == rows.size() || m_.pulls.size() == before)
        return stored;
    }
  }

  void one_step() {
    auto op = in_.u8() % 14;
    switch (op) {
    case 0:
    case 1: { // enqueue a row that fits; an attempt that must wait times out
      auto e = rows_.row(q_, in_);
      c_.send(enqueue_atom::value, e, no_wait);
      auto a = c_.reply();
      if (m_.closed) {
        expect_error(a,
                     make_error(error_code::cancelled, kind_name(true) + " is closed."));
        return;
      }
      if (store_rows({e}) == 1) {
        PROMISE(a.what == answer::kind::count && a.count == 1);
      } else {
        expect_error(a, error_code::deadline_exceeded);
      }
      return;
    }
    case 2: { // enqueue a row that does not fit
      c_.send(enqueue_atom::value, rows_.bad_row(q_, in_), no_wait);
      expect_error(c_.reply(), error_code::invalid_argument);
      return;
    }
    case 3: { // enqueue_many of 0 to 4 rows of one shape
      size_t n = in_.u8() % 5u;
      std::vector<element> rows;
      auto batch = new_batch(n, rows);
      c_.send(enqueue_many_atom::value, batch, no_wait);
      auto a = c_.reply();
      if (n == 0) { // at once, even when closed
        PROMISE(a.what == answer::kind::count && a.count == 0);
        return;
      }
      if (m_.closed) {
        expect_error(a,
                     make_error(error_code::cancelled, kind_name(true) + " is closed."));
        return;
      }
      if (store_rows(rows) == n) // a partly stored batch stays stored
        PROMISE(a.what == answer::kind::count && a.count == static_cast<int32_t>(n));
      else
        expect_error(a, error_code::deadline_exceeded);
      return;
    }
    case 4: { // dequeue
      c_.send(dequeue_atom::value, no_wait);
      auto a = c_.reply();
      if (!m_.pulls.empty() || (m_.available() == 0 && !m_.closed)) {
        expect_error(a, error_code::deadline_exceeded); // waits behind, Q-12
      } else if (m_.available() == 0) {
        expect_error(a, insufficient(true, 1, m_.size()));
      } else {
        PROMISE(a.what == answer::kind::elem);
        m_.take({a.elem});
      }
      return;
    }
    case 5:
    case 6: { // dequeue_many / dequeue_up_to of -1 to 4 rows
      bool up_to = op == 6;
      int32_t n = static_cast<int32_t>(in_.u8() % 6) - 1;
      if (up_to)
        c_.send(dequeue_up_to_atom::value, n, no_wait);
      else
        c_.send(dequeue_many_atom::value, n, no_wait);
      dequeue_many(c_.reply(), up_to, n);
      return;
    }
    case 7:
    case 8: { // pull / pull_batch of 0 to 3 rows
      bool batch = op == 8;
      int32_t n = in_.u8() % 4;
      demand d;
      d.n = n;
      d.cut = batch_cut::any_size;
      d.as_rows = !batch;
      c_.send(pull_atom::value, d);
      c_.size(); // barrier
      if (n <= 0 || (batch && !q_.shapes_given)) {
        auto a = c_.streamed();
        PROMISE(a.has_value());
        PROMISE(a->what == answer::kind::pulled && a->rows.empty());
        PROMISE(has_code(a->err, error_code::invalid_argument));
        return;
      }
      m_.pulls.push_back({n, batch});
      serve_pulls();
      return;
    }
    case 9: { // give_back: rows that fit go back in front, others are refused, and
              // so are those beyond what the client was handed
      size_t n = in_.u8() % 4u;
      std::vector<element> rows, fitting;
      for (size_t i = 0; i < n; ++i) {
        bool bad = in_.u8() % 4 == 0;
        rows.push_back(bad ? rows_.bad_row(q_, in_) : rows_.row(q_, in_));
        if (!bad)
          fitting.push_back(rows.back());
      }
      c_.send(give_back_atom::value, rows);
      c_.size(); // barrier
      fitting.resize(std::min(fitting.size(), m_.handed));
      m_.handed -= fitting.size();
      if (!fitting.empty()) {
        m_.put_back(fitting);
        serve_pulls();
      }
      return;
    }
    case 10: { // push: only when it completes at once (no pending pushes)
      size_t n = in_.u8() % 3u;
      std::vector<element> rows;
      for (size_t i = 0; i < n; ++i)
        rows.push_back(rows_.row(q_, in_));
      if (!m_.closed && rows.size() > m_.room())
        return;
      c_.send(push_atom::value, rows);
      c_.size(); // barrier
      auto a = c_.streamed();
      PROMISE(a.has_value() && a->what == answer::kind::pushed);
      if (rows.empty()) {
        PROMISE(a->count == 0 && !a->err);
      } else if (m_.closed) {
        PROMISE(a->count == 0);
        same_error(a->err,
                   make_error(error_code::cancelled, kind_name(true) + " is closed."));
      } else {
        PROMISE(a->count == static_cast<int32_t>(n) && !a->err);
        store_rows(rows);
      }
      return;
    }
    case 12:
      keyed_step();
      return;
    case 11: { // unpull: pending pulls answered cancelled
      c_.send(unpull_atom::value);
      c_.size(); // barrier
      while (!m_.pulls.empty()) {
        m_.pulls.pop_front();
        auto a = c_.streamed();
        PROMISE(a.has_value());
        PROMISE(a->what == answer::kind::pulled && a->rows.empty());
        same_error(a->err,
                   make_error(error_code::cancelled, "Dequeue operation was cancelled"));
      }
      return;
    }
    default: { // close, with or without cancelling pending enqueues
      bool cancel = in_.u8() % 2 == 1;
      c_.send(close_atom::value, cancel);
      auto a = c_.reply();
      if (m_.closed && !cancel) {
        expect_error(a,
                     make_error(error_code::cancelled, "Queue '" + q_.spec.resource_name +
                                                           "' is already closed."));
        return;
      }
      PROMISE(a.what == answer::kind::flag && a.flag);
      m_.closed = true;
      serve_pulls();
      PROMISE(c_.is_closed());
      return;
    }
    }
  }

  /// `n` new rows of one shape (in `rows`) and their batch.
  element new_batch(size_t n, std::vector<element>& rows) {
    auto shapes = row_shapes(q_, in_);
    for (size_t i = 0; i < n; ++i)
      rows.push_back(rows_.row(q_, shapes, in_));
    element batch;
    for (size_t i = 0; i < q_.spec.num_components(); ++i) {
      std::vector<tensor> column;
      for (auto& r : rows)
        column.push_back(r.components[i]);
      auto row_shape = i == 0 && q_.kind == queue_kind::priority
                           ? tensor_shape{}
                           : shapes[i - (q_.kind == queue_kind::priority ? 1 : 0)];
      batch.components.push_back(
          tensor::stack_or_empty(column, q_.spec.dtypes[i], row_shape));
    }
    return batch;
  }

  /// A keyed enqueue (enqueue_keyed) of producer "a" or "b": a new batch, a
  /// retry of its last one (the queue stores only what it does not hold), a
  /// request with a number already seen, or an older batch. Attempts cannot
  /// wait (timeout 0), so none is ever replaced.
  void keyed_step() {
    auto who = in_.u8() % 2u;
    auto& p = producers_[who];
    std::string name = who == 0 ? "a" : "b";
    auto kind = p.batch == 0 ? 1 : in_.u8() % 4u;
    auto send = [&](uint64_t batch, uint64_t attempt) {
      c_.send_keyed(enqueue_keyed_atom::value, batch_key{name, batch, attempt}, p.data,
                    no_wait);
      return c_.reply();
    };
    if (kind >= 2) { // refused: neither stores nor counts as an attempt
      auto a = kind == 2 ? send(p.batch, p.attempt) : send(p.batch - 1, p.attempt + 1);
      expect_error(a, kind == 2          ? error_code::aborted
                      : p.batch - 1 == 0 ? error_code::invalid_argument
                                         : error_code::failed_precondition);
      return;
    }
    if (kind == 1) { // a new batch of 1 to 4 rows
      p.rows.clear();
      p.data = new_batch(1 + in_.u8() % 4u, p.rows);
      ++p.batch;
      p.stored = 0;
    }
    auto a = send(p.batch, ++p.attempt);
    auto n = p.rows.size();
    if (p.stored == n) { // held whole: answered without storing
      PROMISE(a.what == answer::kind::count && a.count == static_cast<int32_t>(n));
      return;
    }
    if (m_.closed) {
      expect_error(a, make_error(error_code::cancelled, kind_name(true) + " is closed."));
      return;
    }
    std::vector<element> rest(p.rows.begin() + static_cast<std::ptrdiff_t>(p.stored),
                              p.rows.end());
    p.stored += store_rows(rest); // the rows stored before stay
    if (p.stored == n)
      PROMISE(a.what == answer::kind::count && a.count == static_cast<int32_t>(n));
    else
      expect_error(a, error_code::deadline_exceeded);
  }

  void dequeue_many(const answer& a, bool up_to, int32_t n) {
    if (!q_.shapes_given) { // Q-6, first
      expect_error(a, error_code::invalid_argument);
      return;
    }
    if (n < 0) {
      expect_error(a, error_code::invalid_argument);
      return;
    }
    if (n == 0) {
      PROMISE(a.what == answer::kind::elem);
      PROMISE(a.elem == expected_batch(q_.spec, {}));
      return;
    }
    auto want = static_cast<size_t>(n);
    auto size = m_.size();
    bool priority = q_.kind == queue_kind::priority;
    if (!m_.pulls.empty()) { // waits behind them, then times out
      expect_error(a, error_code::deadline_exceeded);
      return;
    }
    if (m_.closed && size < want) {
      if (up_to && size > 0) {
        PROMISE(a.what == answer::kind::elem);
        check_batch(a.elem, size);
        return;
      }
      auto err = insufficient(false, n, size);
      expect_error(a, err);
      return;
    }
    // Open (or closed with enough): complete now, or time out with every
    // held row back in place.
    bool now = priority ? size >= want : m_.available() >= want;
    if (!now) {
      expect_error(a, error_code::deadline_exceeded);
      return;
    }
    PROMISE(a.what == answer::kind::elem);
    check_batch(a.elem, want);
  }

  void check_streamed_none_left() { PROMISE(!c_.streamed().has_value()); }

  /// Closes with cancel and takes every row: exactly the model's.
  void finish() {
    c_.send(close_atom::value, true);
    auto a = c_.reply();
    PROMISE(a.what == answer::kind::flag && a.flag);
    m_.closed = true;
    serve_pulls();
    while (m_.size() > 0) {
      c_.send(dequeue_atom::value, no_wait);
      auto r = c_.reply();
      PROMISE(r.what == answer::kind::elem);
      m_.take({r.elem});
    }
    c_.send(dequeue_atom::value, no_wait);
    expect_error(c_.reply(), insufficient(true, 1, 0));
    PROMISE(c_.size() == 0);
    check_streamed_none_left();
  }

  queue_under_test& q_;
  input& in_;
  model m_;
  client c_;
  row_maker rows_;
  /// The keyed producers "a" and "b" as the queue should know them.
  struct keyed_producer {
    uint64_t batch = 0;
    uint64_t attempt = 0;
    std::vector<element> rows; // of its last batch
    element data;              // that batch as sent
    size_t stored = 0;         // of its rows
  };
  keyed_producer producers_[2];
};

std::optional<queue_under_test> make_queue(input& in) {
  queue_under_test q;
  q.kind = static_cast<queue_kind>(in.u8() % 4);
  auto b = in.u8();
  q.capacity = b % 9 == 0 ? -1 : 1 + b % 8;
  size_t ncomp = 1 + in.u8() % 2u;
  auto shape_flags = in.u8();
  q.shapes_given = q.kind == queue_kind::padding_fifo || (shape_flags & 1) != 0;
  for (size_t i = 0; i < ncomp; ++i) {
    q.dtypes.push_back(all_dtypes[in.u8() % 7]);
    size_t rank = in.u8() % 3u;
    std::vector<int64_t> dims;
    for (size_t k = 0; k < rank; ++k) {
      auto d = in.u8();
      bool unknown = q.kind == queue_kind::padding_fifo && d % 3 == 0;
      dims.push_back(unknown ? -1 : 1 + d % 2);
    }
    if (q.shapes_given)
      q.shapes.emplace_back(std::move(dims));
  }
  queue_options o;
  o.capacity = q.capacity;
  o.dtypes = q.dtypes;
  o.shapes = q.shapes;
  o.name = "fuzz";
  if (q.kind == queue_kind::random_shuffle) {
    auto cap = q.capacity < 0 ? 5 : q.capacity;
    q.min_after_dequeue = in.u8() % std::min(cap, 3);
    o.min_after_dequeue = q.min_after_dequeue;
    o.seed = 1;
    o.seed2 = 1 + in.u8() % 4;
  }
  try {
    q.handle = spawn_queue(quern::fuzz::system(), q.kind, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spawn_queue refused a valid spec: %s\n", e.what());
    quern::fuzz::broken("spawn_queue refused a valid spec", __LINE__);
  }
  return q;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  input in{data, size};
  auto q = make_queue(in);
  {
    client c{q->handle};
    c.send(spec_atom::value);
    c.self()->receive(
        [&](queue_spec& s) { q->spec = std::move(s); },
        [&](caf::error&) { quern::fuzz::broken("spec failed", __LINE__); },
        caf::after(answer_bound) >>
            [&] { quern::fuzz::broken("no answer to spec within 10 s", __LINE__); });
  }
  driver d{*q, in};
  d.run();
  return 0;
}
