#include "client/vector/link_resolver.hpp"

#include <memory>

#include "client/path.hpp"

namespace vnfs::detail {

namespace {

constexpr int max_links = 40;  // as Linux's MAXSYMLINKS

struct resolver : std::enable_shared_from_this<resolver> {
  backend* b = nullptr;
  std::vector<std::string>* paths = nullptr;
  std::vector<std::error_code> errors;
  std::vector<std::size_t> pending;  ///< indices still to look at
  std::vector<int> hops;             ///< links followed, per path
  std::function<void(std::vector<std::error_code>)> done;
  // one round
  std::vector<vattr> attrs;
  std::vector<std::string> links;
  std::vector<std::size_t> link_of;
  std::vector<std::string> targets;
  vresult r;

  void round() {
    if (pending.empty()) return done(std::move(errors));
    attrs.clear();
    for (std::size_t i : pending) attrs.emplace_back((*paths)[i], attr::type);
    b->vgetattrs(attrs, &r, [self = shared_from_this()](std::error_code, std::size_t) { self->on_types(); });
  }

  void on_types() {
    std::vector<std::size_t> again;
    links.clear();
    link_of.clear();
    for (std::size_t k = 0; k < pending.size(); ++k) {
      std::size_t i = pending[k];
      if (r.status[k] == errc::not_executed) again.push_back(i);  // after a failed one: next round
      else if (r.status[k]) errors[i] = r.status[k];
      else if (attrs[k].stat.type == file_type::symlink) links.push_back((*paths)[i]), link_of.push_back(i);
    }
    pending = std::move(again);
    if (links.empty()) return round();
    targets.assign(links.size(), std::string());
    b->vreadlink(links, targets.data(), &r, [self = shared_from_this()](std::error_code, std::size_t) { self->on_targets(); });
  }

  void on_targets() {
    for (std::size_t k = 0; k < links.size(); ++k) {
      std::size_t i = link_of[k];
      if (r.status[k] == errc::not_executed) {
        pending.push_back(i);
        continue;
      }
      if (r.status[k]) {
        errors[i] = r.status[k];
        continue;
      }
      if (++hops[i] > max_links) {
        errors[i] = std::make_error_code(std::errc::too_many_symbolic_link_levels);
        continue;
      }
      if (targets[k].empty() || targets[k].front() == '/') {
        errors[i] = std::make_error_code(std::errc::invalid_argument);
        continue;
      }
      try {
        (*paths)[i] = normalize_path(join_path(split_parent((*paths)[i]).first, targets[k]));
        pending.push_back(i);
      } catch (const std::system_error&) {  // climbs above the root
        errors[i] = std::make_error_code(std::errc::invalid_argument);
      }
    }
    round();
  }
};

}  // namespace

void resolve_links(backend& b, std::vector<std::string>& paths, std::function<void(std::vector<std::error_code>)> done) {
  auto r = std::make_shared<resolver>();
  r->b = &b;
  r->paths = &paths;
  r->errors.assign(paths.size(), std::error_code());
  r->hops.assign(paths.size(), 0);
  for (std::size_t i = 0; i < paths.size(); ++i) r->pending.push_back(i);
  r->done = std::move(done);
  r->round();
}

}  // namespace vnfs::detail
