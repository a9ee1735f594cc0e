#ifndef HOMEPWNER_CSODIUM_SHIM_H
#define HOMEPWNER_CSODIUM_SHIM_H
#include <sodium.h>
#endif
