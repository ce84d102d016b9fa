/**
 * rdma_cm (librdmacm) for jrdma: event channels, ids, address and route resolution, listen/accept/reject/connect/
 * disconnect with private data, {@code rdma_init_qp_attr}, and datagram ({@code RDMA_PS_UDP}) ids. It talks to any
 * rdma_cm peer (rping, ucmatose, perftest's {@code -R}); QPs are the verbs API's, on the native provider's device the
 * id resolves to. The software device has no rdma_cm: jrdma-connect's TCP exchange serves it.
 * On the module path grant {@code --enable-native-access=dev.jrdma.connect}.
 */
package dev.jrdma.cm;
