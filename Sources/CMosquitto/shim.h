#ifndef RCAGENT_CMOSQUITTO_SHIM_H
#define RCAGENT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#endif
