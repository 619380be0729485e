// A program that includes only <quern/quern.hpp> (and links quern::quern)
// has every layer: a queue, a runner under a coordinator, a summary writer,
// a reader's helper and remoting's options compile and run from it alone.
#include <quern/quern.hpp>

#include <catch2/catch.hpp>

TEST_CASE("<quern/quern.hpp> alone is enough for a program", "[umbrella]") {
  quern::config cfg;
  quern::actor_system sys{cfg};
  auto q =
      quern::spawn_fifo_queue(sys, 10, {quern::dtype::int64}, {quern::tensor_shape{}});
  quern::coordinator coord{sys};
  quern::queue_runner runner{q, {quern::async_op([](quern::async_run& run) {
                               if (run.index() < 3)
                                 run.emit(quern::element{quern::tensor::scalar(
                                     static_cast<int64_t>(run.index()))});
                               if (run.index() == 2)
                                 run.end();
                               else
                                 run.done();
                             })}};
  auto threads = runner.start(sys, coord.actor());
  quern::blocking_queue consumer{sys, q};
  for (int64_t i = 0; i < 3; ++i)
    CHECK(consumer.dequeue()[0].scalar_value<int64_t>() == i);
  coord.join(threads);
  CHECK_THROWS_AS(consumer.dequeue(), quern::out_of_range_error);
  // The other layers' names are there too.
  quern::serve_options serve_opts;
  CHECK(serve_opts.host == "127.0.0.1");
  CHECK(quern::wire_version > 0);
  using writer = quern::summary_writer;
  using reader = quern::text_line_reader;
  CHECK(sizeof(writer) > 0);
  CHECK(sizeof(reader) > 0);
}
