#include "quern/looper.hpp"

#include "quern/actor_system.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/others.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

namespace quern {

namespace {

/// handle -> looper: registered with the coordinator, start looping. The
/// looper waits for it so that it never runs before the coordinator could
/// push a stop requested earlier (CO-9: TensorFlow checks the flag first).
using looper_go_atom = caf::atom_constant<caf::atom("looper_go")>;

/// The target form of TensorFlow's LooperThread.
class function_looper : public looper {
public:
  explicit function_looper(std::function<void()> target) : target_(std::move(target)) {}
  void run_loop() override { target_(); }

private:
  std::function<void()> target_;
};

/// One wait of a blocking receive at most this long: `now + timeout` must
/// not overflow the clock for huge intervals. The wait goes on afterwards.
constexpr caf::timespan max_wait_slice = std::chrono::hours(24);

/// The looper: a blocking actor (its own thread, so the body may block) that
/// runs TensorFlow's LooperThread.run (CO-9) with the coordinator's pushed
/// (stop) in place of wait_for_stop / should_stop.
class looper_actor : public caf::blocking_actor {
public:
  looper_actor(caf::actor_config& cfg, std::shared_ptr<looper> body,
               std::optional<caf::timespan> interval, coordinator_actor coord,
               std::string name)
      : caf::blocking_actor(cfg), body_(std::move(body)), interval_(interval),
        coord_(std::move(coord)), name_(std::move(name)) {}

  const char* name() const override { return "quern.looper"; }

private:
  auto on_stop() {
    return [this](stop_atom) { stopping_ = true; };
  }

  // Blocking actors get exit messages as ordinary messages: an exit (e.g.
  // from the looper_thread's destructor) ends the looper with its reason
  // after stop_loop(); a normal one is ignored, as CAF's actors do.
  auto on_exit_msg() {
    return [this](caf::exit_msg& msg) {
      if (msg.reason == caf::exit_reason::normal)
        return;
      stopping_ = true;
      killed_ = true;
      if (!exit_reason_)
        exit_reason_ = std::move(msg.reason);
    };
  }

  auto on_down() {
    return [this](caf::down_msg& dm) {
      if (dm.source == coord_addr_)
        stopping_ = true;
    };
  }

  // Anything else would stay in the mailbox forever (blocking actors skip
  // what they do not match).
  static auto drop_others() {
    return caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
      return caf::message{};
    };
  }

public:
  void act() override {
    // Stop when the coordinator goes: nobody could push a stop any more.
    // Only its address is kept, so the looper does not keep it alive.
    if (coord_) {
      monitor(coord_);
      coord_addr_ = coord_.address();
      coord_ = nullptr;
    }
    bool go = false;
    while (!go && !stopping_)
      receive([&](looper_go_atom) { go = true; }, on_stop(), on_exit_msg(), on_down(),
              drop_others());
    if (killed_ && !go) { // ended before it was registered: no user code runs
      fail_state(exit_reason_);
      return;
    }
    if (guarded([&] { body_->start_loop(); })) {
      loop();
      guarded([&] { body_->stop_loop(); }); // also after a failed run (documented)
    }
    // The first exception is the one the coordinator records.
    fail_state(failure_ ? failure_ : exit_reason_);
  }

private:
  void loop() {
    using clock = std::chrono::steady_clock;
    bool timed = interval_ && *interval_ > caf::timespan{0};
    // TensorFlow's fixed boundaries: the first run at once, then start + k * interval.
    auto next = clock::now();
    for (;;) {
      if (timed)
        wait_until(next);
      else
        wait_until(clock::now()); // only takes a stop that is already there
      if (stopping_)
        return;
      if (timed)
        next += *interval_;
      if (!guarded([&] { body_->run_loop(); }))
        return;
    }
  }

  /// Receives until `deadline` or a stop, whichever comes first; a stop ends
  /// the wait at once (it is a message, not a flag polled).
  void wait_until(std::chrono::steady_clock::time_point deadline) {
    bool due = false;
    while (!due && !stopping_) {
      auto left = std::chrono::duration_cast<caf::timespan>(
          deadline - std::chrono::steady_clock::now());
      left = std::clamp(left, caf::timespan{0}, max_wait_slice);
      receive(
          on_stop(), on_exit_msg(), on_down(), drop_others(), caf::after(left) >> [&] {
            due = std::chrono::steady_clock::now() >= deadline;
          });
    }
  }

  /// Runs user code; an exception is kept (the first one only, CO-4) with
  /// the looper's name as its origin. Returns false if `f` threw.
  template <class F>
  bool guarded(F f) {
    try {
      f();
      return true;
    } catch (...) {
      if (!failure_)
        failure_ = with_origin(error_from_exception(std::current_exception()), name_);
      return false;
    }
  }

  std::shared_ptr<looper> body_;
  std::optional<caf::timespan> interval_;
  coordinator_actor coord_;
  caf::actor_addr coord_addr_;
  std::string name_;
  bool stopping_ = false;
  bool killed_ = false;
  caf::error exit_reason_;
  caf::error failure_;
};

std::shared_ptr<looper> target_looper(std::function<void()> target) {
  if (!target)
    throw argument_error("a looper needs a target");
  return std::make_shared<function_looper>(std::move(target));
}

} // namespace

looper_thread::looper_thread(coordinator& coord, std::optional<caf::timespan> interval,
                             std::function<void()> target, std::string name)
    : looper_thread(coord, interval, target_looper(std::move(target)), std::move(name)) {}

looper_thread::looper_thread(coordinator& coord, std::optional<caf::timespan> interval,
                             std::shared_ptr<looper> body, std::string name)
    : sys_(&coord.system()), name_(std::move(name)) {
  if (!body)
    throw argument_error("a looper needs a body");
  actor_ = sys_->spawn<looper_actor>(std::move(body), interval, coord.actor(), name_);
  detail::exit_watch::track(*sys_, actor_, "looper '" + name_ + "'");
  try {
    // Registered before it may run: the coordinator pushes a stop requested
    // earlier before it answers, so that stop is ahead of (go).
    coord.register_actor(actor_, name_, true, true);
  } catch (...) {
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
    throw;
  }
  caf::anon_send(actor_, looper_go_atom::value);
}

looper_thread::~looper_thread() {
  // Never waits: a program whose coordinator never stops must still end.
  if (actor_)
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

looper_thread::looper_thread(looper_thread&& other) noexcept
    : sys_(other.sys_), actor_(std::move(other.actor_)), name_(std::move(other.name_)) {
  other.actor_ = nullptr;
}

looper_thread& looper_thread::operator=(looper_thread&& other) noexcept {
  if (this != &other) {
    if (actor_)
      caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
    sys_ = other.sys_;
    actor_ = std::move(other.actor_);
    name_ = std::move(other.name_);
    other.actor_ = nullptr;
  }
  return *this;
}

void looper_thread::join() {
  if (!actor_)
    return;
  // A down message comes at once for an actor that already ended.
  caf::scoped_actor self{*sys_};
  self->monitor(actor_);
  bool down = false;
  while (!down)
    self->receive([&](caf::down_msg& dm) { down = dm.source == actor_.address(); });
}

void looper_thread::detach() noexcept {
  actor_ = nullptr;
}

looper_thread loop(coordinator& coord, std::optional<caf::timespan> interval,
                   std::function<void()> target, std::string name) {
  return looper_thread{coord, interval, std::move(target), std::move(name)};
}

} // namespace quern
