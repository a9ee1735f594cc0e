#ifndef HOMEPWNER_CSPNG_SHIM_H
#define HOMEPWNER_CSPNG_SHIM_H
#include <spng.h>
#endif
