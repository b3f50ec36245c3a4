#include "client/vector/item_runner.hpp"

namespace vnfs::detail {

namespace {

struct in_order_run : std::enable_shared_from_this<in_order_run> {
  std::size_t n = 0;
  item_step step;
  vresult* out = nullptr;
  done_fn done;

  void next(std::size_t i) {
    if (i == n) return finish();
    step(i, [self = shared_from_this(), i](std::error_code ec, std::size_t) {
      self->out->status[i] = ec;
      if (ec) return self->finish();
      self->next(i + 1);
    });
  }
  void finish() {
    finish_result(*out);
    done(out->error, out->ok_count);
  }
};

}  // namespace

void run_in_order(std::size_t n, item_step step, vresult* out, done_fn done) {
  reset_result(*out, n);
  auto run = std::make_shared<in_order_run>();
  run->n = n;
  run->step = std::move(step);
  run->out = out;
  run->done = std::move(done);
  run->next(0);
}

}  // namespace vnfs::detail
