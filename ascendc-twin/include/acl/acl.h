/*
 * `acl/acl.h` for the host half of an AscendC program built for the twin: the runtime API
 * acl-twin implements (acl_base.h, acl_rt.h). Model inference (aclmdl*) and operator
 * (aclop*) APIs are not provided.
 */
#ifndef ASC_TWIN_ACL_H
#define ASC_TWIN_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#endif /* ASC_TWIN_ACL_H */
