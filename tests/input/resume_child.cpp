// A child process of resume_test.cpp: runs the resume tests' pipeline,
// records the values it delivered up to step `at` (synced), takes a checkpoint
// at that step into `dir`, goes on for `lost` steps and kills itself with
// SIGKILL, as a job preempted after its checkpoint.
//
//   quern_test_resume_child DIR KIND THREADS AT LOST

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <unistd.h>

#include "resume_pipeline.hpp"

using namespace quern;
using namespace quern::test;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: quern_test_resume_child DIR KIND THREADS AT LOST\n";
    return 2;
  }
  std::string dir = argv[1];
  setup s;
  s.kind = static_cast<shape>(std::atoi(argv[2]));
  s.threads = std::atoi(argv[3]);
  int at = std::atoi(argv[4]);
  int lost = std::atoi(argv[5]);
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_dir = dir;
  built p{sys, s, po};
  p.pipe.start_queue_runners();
  auto in = p.pipe.make_consumer(p.b.queue);
  values out;
  consume(in, p.b, at, out);
  // What the trainer saw before its checkpoint: kept with it.
  auto* f = std::fopen((dir + "/delivered").c_str(), "w");
  for (auto x : out)
    std::fprintf(f, "%d\n", x);
  std::fflush(f);
  ::fsync(::fileno(f));
  std::fclose(f);
  p.pipe.checkpoint(at);
  p.pipe.wait_checkpoint(); // on disk: killed after its checkpoint
  values wasted;
  consume(in, p.b, lost, wasted);
  std::raise(SIGKILL);
  return 3;
}
