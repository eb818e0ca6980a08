// libmosquitto (libmosquitto1): MQTT, for push ([Push] MQTT=) and the operator tool's MQTT pings and relay.
#include <mosquitto.h>

#include "LazyLibrary.h"

#define RC_LAZY_THIS RC_LAZY_MOSQUITTO
typedef void (*rc_mosquitto_code_callback)(struct mosquitto *, void *, int);
typedef void (*rc_mosquitto_message_callback)(struct mosquitto *, void *, const struct mosquitto_message *);
typedef void (*rc_mosquitto_subscribe_callback)(struct mosquitto *, void *, int, int, const int *);
typedef int (*rc_mosquitto_password_callback)(char *, int, int, void *);
#define MOSQUITTO_FUNCTIONS(F, P, V)                                                                              \
    F(int, mosquitto_lib_init, (void), ())                                                                        \
    F(struct mosquitto *, mosquitto_new, (const char *id, bool clean, void *object), (id, clean, object))          \
    P(void, mosquitto_destroy, (struct mosquitto * m), (m))                                                       \
    F(int, mosquitto_username_pw_set, (struct mosquitto * m, const char *user, const char *password),             \
      (m, user, password))                                                                                        \
    F(int, mosquitto_tls_set,                                                                                     \
      (struct mosquitto * m, const char *cafile, const char *capath, const char *certfile, const char *keyfile,   \
       rc_mosquitto_password_callback callback),                                                                  \
      (m, cafile, capath, certfile, keyfile, callback))                                                           \
    F(int, mosquitto_will_set,                                                                                    \
      (struct mosquitto * m, const char *topic, int length, const void *payload, int qos, bool retain),           \
      (m, topic, length, payload, qos, retain))                                                                   \
    F(int, mosquitto_will_clear, (struct mosquitto * m), (m))                                                     \
    F(int, mosquitto_threaded_set, (struct mosquitto * m, bool threaded), (m, threaded))                           \
    F(int, mosquitto_connect, (struct mosquitto * m, const char *host, int port, int keepalive),                  \
      (m, host, port, keepalive))                                                                                 \
    F(int, mosquitto_reconnect, (struct mosquitto * m), (m))                                                      \
    F(int, mosquitto_int_option, (struct mosquitto * m, enum mosq_opt_t option, int value), (m, option, value))    \
    F(int, mosquitto_connect_bind_v5,                                                                             \
      (struct mosquitto * m, const char *host, int port, int keepalive, const char *bind,                         \
       const mosquitto_property *properties),                                                                     \
      (m, host, port, keepalive, bind, properties))                                                               \
    F(int, mosquitto_property_add_int32, (mosquitto_property * *list, int identifier, uint32_t value),            \
      (list, identifier, value))                                                                                  \
    P(void, mosquitto_property_free_all, (mosquitto_property * *list), (list))                                    \
    F(int, mosquitto_reconnect_delay_set,                                                                         \
      (struct mosquitto * m, unsigned int delay, unsigned int maximum, bool exponential),                         \
      (m, delay, maximum, exponential))                                                                           \
    F(int, mosquitto_disconnect, (struct mosquitto * m), (m))                                                     \
    F(int, mosquitto_publish,                                                                                     \
      (struct mosquitto * m, int *id, const char *topic, int length, const void *payload, int qos, bool retain),  \
      (m, id, topic, length, payload, qos, retain))                                                               \
    F(int, mosquitto_subscribe, (struct mosquitto * m, int *id, const char *pattern, int qos), (m, id, pattern, qos)) \
    F(int, mosquitto_unsubscribe, (struct mosquitto * m, int *id, const char *pattern), (m, id, pattern))         \
    F(int, mosquitto_loop, (struct mosquitto * m, int timeout, int packets), (m, timeout, packets))               \
    F(int, mosquitto_loop_forever, (struct mosquitto * m, int timeout, int packets), (m, timeout, packets))       \
    P(void, mosquitto_user_data_set, (struct mosquitto * m, void *object), (m, object))                           \
    P(void, mosquitto_connect_callback_set, (struct mosquitto * m, rc_mosquitto_code_callback callback), (m, callback)) \
    P(void, mosquitto_disconnect_callback_set, (struct mosquitto * m, rc_mosquitto_code_callback callback),       \
      (m, callback))                                                                                              \
    P(void, mosquitto_publish_callback_set, (struct mosquitto * m, rc_mosquitto_code_callback callback), (m, callback)) \
    P(void, mosquitto_subscribe_callback_set, (struct mosquitto * m, rc_mosquitto_subscribe_callback callback),   \
      (m, callback))                                                                                              \
    P(void, mosquitto_message_callback_set, (struct mosquitto * m, rc_mosquitto_message_callback callback),       \
      (m, callback))                                                                                              \
    F(const char *, mosquitto_strerror, (int code), (code))                                                       \
    F(const char *, mosquitto_connack_string, (int code), (code))                                                 \
    F(const char *, mosquitto_reason_string, (int code), (code))

RC_LAZY_DEFINE(rc_lazy_mosquitto, "libmosquitto.so.1", "libmosquitto1",
               "MQTT (push over [Push] MQTT=, rcadmin's MQTT pings and relay)",
               RC_LAZY_FIRST("libcrypto.so.3", "libssl.so.3"), MOSQUITTO_FUNCTIONS)
