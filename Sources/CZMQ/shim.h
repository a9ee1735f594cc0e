#ifndef HOMEPWNER_CZMQ_SHIM_H
#define HOMEPWNER_CZMQ_SHIM_H
#include <zmq.h>
#endif
