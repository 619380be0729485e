#include "quern/detail/checkpoint_writer.hpp"

#include <utility>

namespace quern::detail {

std::string checkpoint_writer::write(const settings& s, int64_t step,
                                     std::function<checkpoint_contents()> make) {
  wait();
  checkpoint_write_options wo;
  wo.keep_last = s.keep_last;
  wo.sync = written_++ % s.sync_every == 0;
  if (!wo.sync)
    wo.keep_also = last_synced_;
  path_ = checkpoint_path(s.dir, step);
  auto task = [dir = s.dir, wo, step, make = std::move(make)]() mutable {
    auto c = make();
    make = nullptr; // what it held (a snapshot's rows) goes before the file is written
    c.step = step;
    return write_checkpoint(dir, c, wo);
  };
  writing_synced_ = wo.sync;
  if (!s.background) {
    auto written = task();
    if (wo.sync)
      last_synced_ = std::move(written);
    return path_;
  }
  writing_ = threads_.submit(std::packaged_task<std::string()>{std::move(task)});
  return path_;
}

void checkpoint_writer::wait() {
  if (!writing_.valid())
    return;
  auto writing = std::move(writing_);
  auto written = writing.get();
  if (writing_synced_)
    last_synced_ = std::move(written);
}

} // namespace quern::detail
