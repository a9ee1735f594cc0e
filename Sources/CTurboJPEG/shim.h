#ifndef HOMEPWNER_CTURBOJPEG_SHIM_H
#define HOMEPWNER_CTURBOJPEG_SHIM_H
#include <stddef.h>
#include <turbojpeg.h>
#endif
