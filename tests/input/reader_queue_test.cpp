// Readers over real queue actors of file names (docs/semantics.md RD-1..RD-3) on
// CAF's threaded scheduler: moving across files, the end-of-queue
// OUT_OF_RANGE, queue signature checks, a blocked read that a producer
// thread wakes up, NOT_FOUND and DATA_LOSS through the queue.

#include <map>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>

#include "input_test_util.hpp"

#include "quern/blocking_queue.hpp"
#include "quern/format/record.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"

using namespace quern;
using namespace quern::test;

namespace {

struct system_fixture {
  quern::config cfg;
  caf::actor_system sys{cfg};
};

queue_actor filename_queue(caf::actor_system& sys, int32_t capacity = 32) {
  return spawn_fifo_queue(sys, capacity, {dtype::string}, {tensor_shape{}});
}

void enqueue_names(blocking_queue& q, const strings& names) {
  for (auto& n : names)
    q.enqueue(element{tensor::scalar(n)});
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "RD-1 read moves across files, skips empty ones, ends with the "
                 "queue's OUT_OF_RANGE",
                 "[RD-1]") {
  temp_dir dir;
  auto a = dir.write("a.txt", "a1\na2\n");
  auto empty = dir.write("empty.txt", "");
  auto b = dir.write("b.txt", "b1");
  blocking_queue q{sys, filename_queue(sys)};
  auto queue_name = q.spec().resource_name;
  enqueue_names(q, {a, empty, b});
  q.close();
  text_line_reader r;
  CHECK(r.read(q) == record{a + ":1", "a1"});
  CHECK(r.read(q) == record{a + ":2", "a2"});
  CHECK(r.num_work_units_completed() == 0);
  // a ends, the empty file is skipped silently, b's only line follows.
  CHECK(r.read(q) == record{b + ":1", "b1"});
  CHECK(r.num_work_units_completed() == 2);
  CHECK(thrown<out_of_range_error>([&] { r.read(q); }) ==
        "FIFOQueue '" + queue_name +
            "' is closed and has insufficient elements (requested 1, current size 0)");
  CHECK(r.num_records_produced() == 3);
  CHECK(r.num_work_units_completed() == 3);
  // Once the queue is drained every further read ends the same way.
  CHECK_THROWS_AS(r.read_up_to(q, 4), out_of_range_error);
}

TEST_CASE_METHOD(system_fixture, "RD-1 a blocked read waits for the next file name",
                 "[RD-1]") {
  temp_dir dir;
  strings files;
  for (int i = 0; i < 20; ++i)
    files.push_back(dir.write("f" + std::to_string(i) + ".txt",
                              "line" + std::to_string(i) + "\nmore\n"));
  auto qa = filename_queue(sys, 2);
  // The producer fills a queue of capacity 2 while the reader drains it, so
  // both sides block on each other; no sleeps, the queue orders everything.
  std::thread producer{[&] {
    blocking_queue q{sys, qa};
    enqueue_names(q, files);
    q.close();
  }};
  blocking_queue q{sys, qa};
  whole_file_reader r;
  strings keys;
  try {
    for (;;)
      keys.push_back(r.read(q).key);
  } catch (const out_of_range_error&) {
  }
  producer.join();
  CHECK(keys == files);
  CHECK(r.num_work_units_completed() == 20);
}

TEST_CASE_METHOD(system_fixture, "RD-2 read_up_to over a queue stops at file ends",
                 "[RD-2]") {
  temp_dir dir;
  auto a = dir.write("a.txt", "1\n2\n3\n");
  auto b = dir.write("b.txt", "4\n5\n");
  blocking_queue q{sys, filename_queue(sys)};
  enqueue_names(q, {a, b});
  q.close();
  text_line_reader r;
  CHECK(values_of(r.read_up_to(q, 100)) == strings{"1", "2", "3"});
  CHECK(values_of(r.read_up_to(q, 1)) == strings{"4"});
  CHECK(values_of(r.read_up_to(q, 100)) == strings{"5"});
  CHECK_THROWS_AS(r.read_up_to(q, 100), out_of_range_error);
  CHECK(r.num_records_produced() == 5);
  CHECK(r.num_work_units_completed() == 2);
  // The records go into an example queue as a batch.
  auto examples = spawn_fifo_queue(sys, 10, {dtype::string, dtype::string},
                                   {tensor_shape{}, tensor_shape{}});
  blocking_queue ex{sys, examples};
  ex.enqueue_many(record_batch({{a + ":1", "1"}, {a + ":2", "2"}}));
  ex.enqueue(record_element({b + ":1", "4"}));
  CHECK(ex.size() == 3);
  CHECK(ex.dequeue()[1].scalar_value<std::string>() == "1");
}

TEST_CASE_METHOD(system_fixture, "RD-1 the queue must hold single scalar strings",
                 "[RD-1]") {
  text_line_reader r;
  SECTION("two components") {
    blocking_queue q{sys, spawn_fifo_queue(sys, 4, {dtype::string, dtype::string})};
    q.enqueue(element{tensor::scalar("a"), tensor::scalar("b")});
    CHECK(thrown<invalid_argument_error>([&] { r.read(q); }) ==
          "Expected single component queue");
    CHECK(q.size() == 1); // checked from the spec: nothing was dequeued
  }
  SECTION("a component that is not a string") {
    blocking_queue q{sys, spawn_fifo_queue(sys, 4, {dtype::int64})};
    CHECK(thrown<invalid_argument_error>([&] { r.read(q); }) ==
          "Expected queue with single string component");
  }
  SECTION("a fixed shape of more than one element") {
    blocking_queue q{sys, spawn_fifo_queue(sys, 4, {dtype::string}, {tensor_shape{2}})};
    CHECK(thrown<invalid_argument_error>([&] { r.read_up_to(q, 3); }) ==
          "Expected to dequeue a one-element string tensor");
  }
  SECTION("shapes unspecified: the dequeued element is checked") {
    blocking_queue q{sys, spawn_fifo_queue(sys, 4, {dtype::string})};
    q.enqueue(element{tensor::vector<std::string>({"a", "b"})});
    CHECK(thrown<invalid_argument_error>([&] { r.read(q); }) ==
          "Expected to dequeue a one-element string tensor");
  }
}

TEST_CASE_METHOD(system_fixture,
                 "RD-3 a missing file's NOT_FOUND propagates from read, the next read "
                 "goes on",
                 "[RD-3]") {
  temp_dir dir;
  auto missing = dir.file("nope.txt");
  auto b = dir.write("b.txt", "b1\n");
  blocking_queue q{sys, filename_queue(sys)};
  enqueue_names(q, {missing, b});
  q.close();
  text_line_reader r;
  auto text = thrown<not_found_error>([&] { r.read(q); });
  CHECK(text == missing + "; No such file or directory");
  CHECK(r.read(q) == record{b + ":1", "b1"});
  CHECK_THROWS_AS(r.read(q), out_of_range_error);
}

TEST_CASE_METHOD(system_fixture,
                 "RD-6 a corrupt TFRecord file's DATA_LOSS names the offset",
                 "[RD-6][SW-22]") {
  temp_dir dir;
  std::string good, bad;
  append_record(good, "g1");
  append_record(bad, "x1");
  append_record(bad, "x2");
  bad[18 + 12] ^= 0x40; // the second record (offset 18) has a damaged payload
  auto g = dir.write("good.tfrecord", good);
  auto f = dir.write("bad.tfrecord", bad);
  blocking_queue q{sys, filename_queue(sys)};
  enqueue_names(q, {g, f});
  q.close();
  tf_record_reader r;
  CHECK(r.read(q) == record{g + ":0", "g1"});
  CHECK(r.read(q) == record{f + ":0", "x1"});
  CHECK(thrown<data_loss_error>([&] { r.read(q); }) == "corrupted record at 30");
  CHECK(r.num_records_produced() == 2);
  CHECK(r.num_work_units_completed() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "RD-1 one reader shared by three threads: calls are serialised, every "
                 "record comes out once",
                 "[RD-1][RD-2]") {
  // One thread calls read, one read_up_to, one read_values_up_to; every
  // line's value is unique, so each can be traced to its key.
  temp_dir dir;
  strings files;
  std::map<std::string, std::string> key_of; // value -> its <file>:<line>
  for (int f = 0; f < 8; ++f) {
    std::string text;
    for (int l = 1; l <= 50; ++l)
      text += "s" + std::to_string(f) + "r" + std::to_string(l) + "\n";
    files.push_back(dir.write("s" + std::to_string(f) + ".txt", text));
    for (int l = 1; l <= 50; ++l)
      key_of["s" + std::to_string(f) + "r" + std::to_string(l)] =
          files.back() + ":" + std::to_string(l);
  }
  auto qa = filename_queue(sys);
  {
    blocking_queue q{sys, qa};
    enqueue_names(q, files);
    q.close();
  }
  text_line_reader r;
  enum class call { read, read_up_to, read_values_up_to };
  // What one thread took: (value, key), the key empty for values alone.
  using taken = std::vector<std::pair<std::string, std::string>>;
  auto consume = [&](taken& out, call how) {
    blocking_queue q{sys, qa}; // one handle per thread, one reader for all
    try {
      for (;;) {
        if (how == call::read) {
          auto rec = r.read(q);
          out.emplace_back(rec.value, rec.key);
        } else if (how == call::read_up_to) {
          for (auto& rec : r.read_up_to(q, 7))
            out.emplace_back(rec.value, rec.key);
        } else {
          auto vs = r.read_values_up_to(q, 5);
          for (size_t i = 0; i < vs.size(); ++i)
            out.emplace_back(std::string(vs[i]), "");
        }
      }
    } catch (const out_of_range_error&) {
    }
  };
  taken t1, t2, t3;
  std::thread second{[&] { consume(t2, call::read_up_to); }};
  std::thread third{[&] { consume(t3, call::read_values_up_to); }};
  consume(t1, call::read);
  second.join();
  third.join();
  std::set<std::string> got;
  for (auto* t : {&t1, &t2, &t3})
    for (auto& [value, key] : *t) {
      got.insert(value);
      if (t != &t3)
        CHECK(key == key_of[value]);
    }
  CHECK(t1.size() + t2.size() + t3.size() == 400);
  CHECK(got.size() == 400);
  CHECK(r.num_records_produced() == 400);
  CHECK(r.num_work_units_completed() == 8);
}
