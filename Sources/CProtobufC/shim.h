#ifndef HOMEPWNER_CPROTOBUFC_SHIM_H
#define HOMEPWNER_CPROTOBUFC_SHIM_H
#include <protobuf-c/protobuf-c.h>
#endif
