#include "client/nfs/txn_view.hpp"

#include "client/memory/registration.hpp"
#include "client/nfs/compound_vectors.hpp"
#include "client/vector/item_runner.hpp"

namespace vnfs::detail {

using namespace nfs4;

void send_txn_control(session_engine& engine, std::uint32_t action, std::uint64_t txnid,
                      std::optional<std::uint64_t> retries, std::uint32_t* outcome, done_fn done) {
  std::vector<nfs_argop4> ops{VNFS_TXN4args{action, txnid, retries ? TXN_RETRY : 0, retries.value_or(0)}};
  engine.submit(
      std::move(ops),
      [&engine, action, outcome, done = std::move(done)](std::error_code ec, compound_reply& r) {
        // The engine learned, after the session was lost, that the transaction never committed.
        *outcome = ec == errc::transaction_aborted ? static_cast<std::uint32_t>(txn_outcome4::TXN_ABORTED)
                                                   : txn_outcome_unanswered;
        const auto& res = r.res.resarray;
        if (!ec && (res.empty() || status_of(res[0]) != nfsstat4::NFS4_OK))
          ec = res.empty() ? std::error_code(r.res.status) : std::error_code(status_of(res[0]));
        if (ec) return done(ec, 0);
        if (res.size() < 2) return done(make_error_code(errc::protocol_error), 0);
        const nfsstat4 s = status_of(res[1]);
        const auto* t = std::get_if<VNFS_TXN4res>(&res[1]);
        if (t == nullptr || s == nfsstat4::NFS4ERR_OP_ILLEGAL || s == nfsstat4::NFS4ERR_NOTSUPP) {
          *outcome = 0;
          return done(make_error_code(errc::transactions_unsupported), 0);
        }
        *outcome = t->outcome;
        if (s != nfsstat4::NFS4_OK) return done(std::error_code(s), 0);
        if (action == static_cast<std::uint32_t>(txn_action4::TXN_BEGIN)) engine.note_transactions();
        done({}, 0);
      },
      {}, true);
}

namespace {

class txn_view final : public backend {
 public:
  txn_view(session_engine& engine, const nfs_fh4& root, std::function<open_owner4()> next_owner,
           std::size_t window_bytes, std::size_t max_registered_bytes, std::shared_ptr<txn_link> link, bool commits)
      : engine_(engine),
        regs_(registration_table::create(max_registered_bytes)),
        link_(link),
        commits_(commits),
        vectors_(engine, root, std::move(next_owner), window_bytes, std::move(link), commits) {}

  // Scalar calls do not run in a transaction: refused, so that none waits for the
  // transaction's own end (the server delays plain COMPOUNDs while it is open).
  void open(const std::string&, int, std::uint32_t, file*, done_fn d) override { refuse(d); }
  void close(const file&, done_fn d) override { refuse(d); }
  void read(const file&, std::uint64_t, read_target, done_fn d) override { refuse(d); }
  void write(const file&, std::uint64_t, write_source, done_fn d) override { refuse(d); }
  void fsync(const file&, done_fn d) override { refuse(d); }
  void stat(const std::string&, file_stat*, done_fn d) override { refuse(d); }
  void fstat(const file&, file_stat*, done_fn d) override { refuse(d); }
  void truncate(const std::string&, std::uint64_t, done_fn d) override { refuse(d); }
  void setattr(const std::string&, unsigned, const file_stat&, done_fn d) override { refuse(d); }
  void mkdir(const std::string&, std::uint32_t, done_fn d) override { refuse(d); }
  void unlink(const std::string&, done_fn d) override { refuse(d); }
  void rmdir(const std::string&, done_fn d) override { refuse(d); }
  void rename(const std::string&, const std::string&, done_fn d) override { refuse(d); }
  void link(const std::string&, const std::string&, done_fn d) override { refuse(d); }
  void symlink(const std::string&, const std::string&, done_fn d) override { refuse(d); }
  void readlink(const std::string&, std::string*, done_fn d) override { refuse(d); }
  void readdir(dir_stream*, done_fn d) override { refuse(d); }

  void vopen(std::span<vopen_item> i, vresult* o, done_fn d) override { vectors_.vopen(i, o, noting(o, std::move(d))); }
  void vclose(std::span<const file> i, vresult* o, done_fn d) override { vectors_.vclose(i, o, noting(o, std::move(d))); }
  void vread(std::span<vio> i, vresult* o, done_fn d) override { vectors_.vread(i, o, noting(o, std::move(d))); }
  void vwrite(std::span<vio> i, vresult* o, done_fn d) override { vectors_.vwrite(i, o, noting(o, std::move(d))); }
  void vgetattrs(std::span<vattr> i, vresult* o, done_fn d) override { vectors_.vgetattrs(i, o, noting(o, std::move(d))); }
  void vsetattrs(std::span<const vattr> i, vresult* o, done_fn d) override { vectors_.vsetattrs(i, o, noting(o, std::move(d))); }
  void vmkdir(std::span<const vmkdir_item> i, vresult* o, done_fn d) override { vectors_.vmkdir(i, o, noting(o, std::move(d))); }
  void vsymlink(std::span<const vlink> i, vresult* o, done_fn d) override { vectors_.vsymlink(i, o, noting(o, std::move(d))); }
  void vhardlink(std::span<const vlink> i, vresult* o, done_fn d) override { vectors_.vhardlink(i, o, noting(o, std::move(d))); }
  void vreadlink(std::span<const std::string> p, std::string* t, vresult* o, done_fn d) override {
    vectors_.vreadlink(p, t, o, noting(o, std::move(d)));
  }
  void vremove(std::span<const std::string> p, vresult* o, done_fn d) override { vectors_.vremove(p, o, noting(o, std::move(d))); }
  void vrename(std::span<const vrename_item> i, vresult* o, done_fn d) override { vectors_.vrename(i, o, noting(o, std::move(d))); }
  void vreaddir(std::span<dir_stream* const> i, unsigned m, vresult* o, done_fn d) override {
    vectors_.vreaddir(i, m, o, noting(o, std::move(d)));
  }
  void vscopy(std::span<vcopy_item> i, vresult* o, done_fn d) override {
    if (commits_) {  // four rounds of COMPOUNDs: not one call's last COMPOUND
      reset_result(*o, i.size());
      o->error = make_error_code(errc::bad_argument);
      return d(o->error, 0);
    }
    vectors_.vscopy(i, o, noting(o, std::move(d)));
  }
  bool call_commits() const override { return commits_; }

  /// The view's own end: the session is its client's.
  void close_all() override { regs_->close(); }
  client_stats stats() const override { return engine_.stats(); }
  registration_table& registrations() override { return *regs_; }

 private:
  static void refuse(done_fn& d) { d(make_error_code(errc::bad_argument), 0); }
  /// `d`, after noting in the link the item whose failure rolled the transaction back.
  done_fn noting(vresult* o, done_fn d) {
    return [link = link_, o, d = std::move(d)](std::error_code ec, std::size_t n) {
      if (ec && ec != errc::transaction_aborted && link->st == txn_link::aborted) link->note_failure(o->failed_index, ec);
      d(ec, n);
    };
  }

  session_engine& engine_;
  std::shared_ptr<registration_table> regs_;
  std::shared_ptr<txn_link> link_;
  bool commits_;
  compound_vectors vectors_;
};

}  // namespace

std::unique_ptr<backend> make_txn_view(session_engine& engine, const nfs_fh4& root,
                                       std::function<open_owner4()> next_owner, std::size_t window_bytes,
                                       std::size_t max_registered_bytes, std::shared_ptr<txn_link> link,
                                       bool commits) {
  return std::make_unique<txn_view>(engine, root, std::move(next_owner), window_bytes, max_registered_bytes,
                                    std::move(link), commits);
}

}  // namespace vnfs::detail
