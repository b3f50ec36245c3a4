// vnfs NFSv4 layer: the basic data types of RFC 8881 §3 and §5 shared by many operations —
// typedefs, nfstime4, stateid4, bitmap4, fattr4, change_info4, owners — and the codec
// machinery the operation headers use.
//
// Naming is a contract: types, fields and enumerators carry their RFC 8881 / RFC 7862 XDR
// names verbatim. Discriminated unions are structs holding the discriminant plus one member per
// non-void arm; only the selected arm travels. Variable-length arrays bounded to one element
// (`T x<1>`) are std::optional<T>, which has exactly the same XDR encoding.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "vnfs/nfs4/constants.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/xdr/codec.hpp"

/// Declares a hand-written codec (a union, or a struct with bounded members); the definitions
/// live in src/nfs4/. Used at global namespace scope.
#define VNFS_NFS4_CODEC(T)                                                   \
  template <>                                                                \
  struct vnfs::xdr::codec<vnfs::nfs4::T> {                                   \
    static void encode(vnfs::xdr::encoder& e, const vnfs::nfs4::T& v);       \
    static void decode(vnfs::xdr::decoder& d, vnfs::nfs4::T& v);             \
  }

namespace vnfs::nfs4 {

using attrlist4 = std::vector<std::byte>;
using changeid4 = std::uint64_t;
using clientid4 = std::uint64_t;
using count4 = std::uint32_t;
using length4 = std::uint64_t;
using mode4 = std::uint32_t;
using nfs_cookie4 = std::uint64_t;
using nfs_fh4 = std::vector<std::byte>;  // at most NFS4_FHSIZE bytes on the wire
using offset4 = std::uint64_t;
using qop4 = std::uint32_t;
using sec_oid4 = std::vector<std::byte>;
using sequenceid4 = std::uint32_t;
using seqid4 = std::uint32_t;
using sessionid4 = std::array<std::byte, NFS4_SESSIONID_SIZE>;
using slotid4 = std::uint32_t;
using utf8string = std::string;
using utf8str_cis = std::string;
using utf8str_cs = std::string;
using utf8str_mixed = std::string;
using component4 = std::string;
using linktext4 = std::string;
using pathname4 = std::vector<component4>;
using verifier4 = std::array<std::byte, NFS4_VERIFIER_SIZE>;
using nfs_lease4 = std::uint32_t;
using acetype4 = std::uint32_t;
using aceflag4 = std::uint32_t;
using acemask4 = std::uint32_t;
using aclflag4 = std::uint32_t;
using gsshandle4_t = std::vector<std::byte>;

enum class nfs_ftype4 : std::uint32_t {
  NF4REG = 1,
  NF4DIR = 2,
  NF4BLK = 3,
  NF4CHR = 4,
  NF4LNK = 5,
  NF4SOCK = 6,
  NF4FIFO = 7,
  NF4ATTRDIR = 8,
  NF4NAMEDATTR = 9,
};

enum class time_how4 : std::uint32_t { SET_TO_SERVER_TIME4 = 0, SET_TO_CLIENT_TIME4 = 1 };

enum class stable_how4 : std::uint32_t { UNSTABLE4 = 0, DATA_SYNC4 = 1, FILE_SYNC4 = 2 };

enum class nfs_lock_type4 : std::uint32_t { READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4 };

/// RFC 2203 service levels.
enum class rpc_gss_svc_t : std::uint32_t {
  RPC_GSS_SVC_NONE = 1,
  RPC_GSS_SVC_INTEGRITY = 2,
  RPC_GSS_SVC_PRIVACY = 3,
};

enum class change_attr_type4 : std::uint32_t {
  NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR = 0,
  NFS4_CHANGE_TYPE_IS_VERSION_COUNTER = 1,
  NFS4_CHANGE_TYPE_IS_VERSION_COUNTER_NOPNFS = 2,
  NFS4_CHANGE_TYPE_IS_TIME_METADATA = 3,
  NFS4_CHANGE_TYPE_IS_UNDEFINED = 4,
};

struct nfstime4 {
  std::int64_t seconds{};
  std::uint32_t nseconds{};
  VNFS_XDR_FIELDS(seconds, nseconds)
  bool operator==(const nfstime4&) const = default;
};

/// union settime4 switch (time_how4 set_it) { case SET_TO_CLIENT_TIME4: nfstime4 time; }
struct settime4 {
  time_how4 set_it{};
  nfstime4 time;
  bool operator==(const settime4&) const = default;
};

struct fsid4 {
  std::uint64_t major{};
  std::uint64_t minor{};
  VNFS_XDR_FIELDS(major, minor)
  bool operator==(const fsid4&) const = default;
};

struct specdata4 {
  std::uint32_t specdata1{};  // major device number
  std::uint32_t specdata2{};  // minor device number
  VNFS_XDR_FIELDS(specdata1, specdata2)
  bool operator==(const specdata4&) const = default;
};

/// RFC 8881 §8.2: seqid plus 12 opaque bytes. The special stateids of §8.2.3 have helpers.
struct stateid4 {
  std::uint32_t seqid{};
  std::array<std::byte, NFS4_OTHER_SIZE> other{};
  VNFS_XDR_FIELDS(seqid, other)
  bool operator==(const stateid4&) const = default;

  /// seqid 0, other all zeros: READ/WRITE/SETATTR without open state.
  static constexpr stateid4 anonymous() { return {}; }
  /// seqid and other all ones: READ bypassing share-reservation checks.
  static constexpr stateid4 bypass() {
    stateid4 s{0xffffffffu, {}};
    for (auto& b : s.other) b = std::byte{0xff};
    return s;
  }
  /// seqid 1, other all zeros: "the current stateid" of the COMPOUND.
  static constexpr stateid4 current() { return {1, {}}; }
  /// seqid NFS4_UINT32_MAX, other all zeros: never valid.
  static constexpr stateid4 invalid() { return {NFS4_UINT32_MAX, {}}; }

  constexpr bool is_anonymous() const { return *this == anonymous(); }
  constexpr bool is_bypass() const { return *this == bypass(); }
  constexpr bool is_current() const { return *this == current(); }
  constexpr bool is_invalid() const { return *this == invalid(); }
  /// One of the four special stateids above (§8.2.3).
  constexpr bool is_special() const {
    return is_anonymous() || is_bypass() || is_current() || is_invalid();
  }
};

/// uint32_t bitmap4<>: attribute (or operation) n is bit n % 32 of word n / 32.
/// Trailing zero words are legal on the wire and preserved by the codec.
struct bitmap4 {
  std::vector<std::uint32_t> words;
  VNFS_XDR_FIELDS(words)
  bool operator==(const bitmap4&) const = default;

  bool test(unsigned attr) const {
    return attr / 32 < words.size() && (words[attr / 32] >> (attr % 32)) & 1u;
  }
  void set(unsigned attr) {
    if (attr / 32 >= words.size()) words.resize(attr / 32 + 1, 0);
    words[attr / 32] |= 1u << (attr % 32);
  }
  void clear(unsigned attr) {
    if (attr / 32 < words.size()) words[attr / 32] &= ~(1u << (attr % 32));
  }
  /// True when no bit is set (whatever the number of words).
  bool none() const {
    for (std::uint32_t w : words)
      if (w != 0) return false;
    return true;
  }
  /// The set bits, ascending.
  std::vector<unsigned> bits() const {
    std::vector<unsigned> out;
    for (std::size_t i = 0; i < words.size(); ++i)
      for (unsigned b = 0; b < 32; ++b)
        if ((words[i] >> b) & 1u) out.push_back(static_cast<unsigned>(i * 32 + b));
    return out;
  }
  /// A bitmap with exactly the given bits set.
  static bitmap4 of(std::initializer_list<unsigned> attrs) {
    bitmap4 m;
    for (unsigned a : attrs) m.set(a);
    return m;
  }
  /// Bits set in both.
  bitmap4 operator&(const bitmap4& o) const {
    bitmap4 r;
    r.words.resize(std::min(words.size(), o.words.size()));
    for (std::size_t i = 0; i < r.words.size(); ++i) r.words[i] = words[i] & o.words[i];
    return r;
  }
};

struct fattr4 {
  bitmap4 attrmask;
  attrlist4 attr_vals;
  VNFS_XDR_FIELDS(attrmask, attr_vals)
  bool operator==(const fattr4&) const = default;
};

struct change_info4 {
  bool atomic{};
  changeid4 before{};
  changeid4 after{};
  VNFS_XDR_FIELDS(atomic, before, after)
  bool operator==(const change_info4&) const = default;
};

struct nfsace4 {
  acetype4 type{};
  aceflag4 flag{};
  acemask4 access_mask{};
  utf8str_mixed who;
  VNFS_XDR_FIELDS(type, flag, access_mask, who)
  bool operator==(const nfsace4&) const = default;
};

struct nfsacl41 {
  aclflag4 na41_flag{};
  std::vector<nfsace4> na41_aces;
  VNFS_XDR_FIELDS(na41_flag, na41_aces)
  bool operator==(const nfsacl41&) const = default;
};

struct mode_masked4 {
  mode4 mm_value_to_set{};
  mode4 mm_mask_bits{};
  VNFS_XDR_FIELDS(mm_value_to_set, mm_mask_bits)
  bool operator==(const mode_masked4&) const = default;
};

struct netaddr4 {
  std::string na_r_netid;
  std::string na_r_addr;
  VNFS_XDR_FIELDS(na_r_netid, na_r_addr)
  bool operator==(const netaddr4&) const = default;
};

struct nfs_impl_id4 {
  utf8str_cis nii_domain;
  utf8str_cs nii_name;
  nfstime4 nii_date;
  VNFS_XDR_FIELDS(nii_domain, nii_name, nii_date)
  bool operator==(const nfs_impl_id4&) const = default;
};

/// open_owner4 and lock_owner4. owner is at most NFS4_OPAQUE_LIMIT bytes.
struct state_owner4 {
  clientid4 clientid{};
  std::vector<std::byte> owner;
  bool operator==(const state_owner4&) const = default;
};
using open_owner4 = state_owner4;
using lock_owner4 = state_owner4;

/// co_ownerid is at most NFS4_OPAQUE_LIMIT bytes.
struct client_owner4 {
  verifier4 co_verifier{};
  std::vector<std::byte> co_ownerid;
  bool operator==(const client_owner4&) const = default;
};

/// so_major_id is at most NFS4_OPAQUE_LIMIT bytes.
struct server_owner4 {
  std::uint64_t so_minor_id{};
  std::vector<std::byte> so_major_id;
  bool operator==(const server_owner4&) const = default;
};

/// RFC 5531 AUTH_SYS credentials body (machinename<255>, gids<16>).
struct authsys_parms {
  std::uint32_t stamp{};
  std::string machinename;
  std::uint32_t uid{};
  std::uint32_t gid{};
  std::vector<std::uint32_t> gids;
  bool operator==(const authsys_parms&) const = default;
};

/// Results shaped `union switch (nfsstat4 status) { case NFS4_OK: X resok4; default: void; }`
/// share one generic codec; results with extra non-OK arms specialize codec<> by hand.
template <class T>
concept status_resok_union = requires(T& r) {
  requires std::is_same_v<decltype(r.status), nfsstat4>;
  r.resok4;
};

namespace detail {
/// Variable-length opaque with an RFC bound; throws xdr::decode_error beyond it.
inline void get_bounded(xdr::decoder& d, std::vector<std::byte>& v, std::uint32_t max) {
  xdr::bytes_view b = d.get_opaque(max);
  v.assign(b.begin(), b.end());
}
}  // namespace detail

}  // namespace vnfs::nfs4

namespace vnfs::xdr {
template <class T>
struct codec<T, std::enable_if_t<nfs4::status_resok_union<T>>> {
  static void encode(encoder& e, const T& v) {
    e.put_u32(static_cast<std::uint32_t>(v.status));
    if (v.status == nfs4::nfsstat4::NFS4_OK) xdr::encode(e, v.resok4);
  }
  static void decode(decoder& d, T& v) {
    v.status = static_cast<nfs4::nfsstat4>(d.get_u32());
    if (v.status == nfs4::nfsstat4::NFS4_OK) xdr::decode(d, v.resok4);
  }
};
}  // namespace vnfs::xdr

VNFS_NFS4_CODEC(settime4);
VNFS_NFS4_CODEC(state_owner4);
VNFS_NFS4_CODEC(client_owner4);
VNFS_NFS4_CODEC(server_owner4);
VNFS_NFS4_CODEC(authsys_parms);
