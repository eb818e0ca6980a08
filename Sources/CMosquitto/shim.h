#ifndef RCAGENT_CMOSQUITTO_SHIM_H
#define RCAGENT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
// MQTT 5 property identifiers (MQTT_PROP_MAXIMUM_PACKET_SIZE, MQTT_PROP_SESSION_EXPIRY_INTERVAL).
#include <mqtt_protocol.h>
#endif
