/**
 * The software RoCEv2 device: the {@code soft} provider of the verbs API ({@link dev.jrdma.soft.SoftProvider}).
 * One device per local IPv4 address; RC queue pairs speak real RoCEv2 over UDP (port 4791 by default) with the
 * RC transport's PSNs, ACKs, NAKs, retransmission, RNR handling, READ/atomic responder resources and memory
 * windows. An application thread that polls a CQ drives the device itself; one receive thread and one timer
 * thread per device socket handle what nobody polls for; no allocation per packet in the steady state. See the module's README for what is and is not implemented.
 */
package dev.jrdma.soft;
