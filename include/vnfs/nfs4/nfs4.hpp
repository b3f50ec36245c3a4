// vnfs NFSv4 layer: everything — RFC 8881 NFSv4.1 and RFC 7862 COPY types and codecs.
#pragma once

#include "vnfs/nfs4/attribute_ops.hpp"
#include "vnfs/nfs4/attributes.hpp"
#include "vnfs/nfs4/compound.hpp"
#include "vnfs/nfs4/constants.hpp"
#include "vnfs/nfs4/filehandle_ops.hpp"
#include "vnfs/nfs4/io_ops.hpp"
#include "vnfs/nfs4/namespace_ops.hpp"
#include "vnfs/nfs4/session_ops.hpp"
#include "vnfs/nfs4/state_ops.hpp"
#include "vnfs/nfs4/status.hpp"
#include "vnfs/nfs4/types.hpp"
