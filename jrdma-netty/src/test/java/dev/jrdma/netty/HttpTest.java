package dev.jrdma.netty;

import static io.netty.handler.codec.http.HttpResponseStatus.OK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Netty's HTTP hello-world example (io.netty.example.http.helloworld: HttpHelloWorldServer, its initializer and
 * handler) answering an HTTP/1.1 client built from netty-codec-http, with one change: the channel classes.
 */
class HttpTest {
    static {
        NettyTestSupport.config();
    }

    private static final byte[] CONTENT = "Hello World".getBytes(StandardCharsets.US_ASCII);

    /** HttpHelloWorldServerHandler: answer every request with "Hello World", keep-alive as the client asks. */
    static final class HelloWorldHandler extends SimpleChannelInboundHandler<HttpObject> {
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (msg instanceof HttpRequest req) {
                boolean keepAlive = HttpUtil.isKeepAlive(req);
                FullHttpResponse response =
                        new DefaultFullHttpResponse(req.protocolVersion(), OK, Unpooled.wrappedBuffer(CONTENT));
                response.headers()
                        .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.TEXT_PLAIN)
                        .setInt(
                                HttpHeaderNames.CONTENT_LENGTH,
                                response.content().readableBytes());
                if (keepAlive) {
                    if (!req.protocolVersion().isKeepAliveDefault())
                        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                } else {
                    response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                }
                var f = ctx.write(response);
                if (!keepAlive) f.addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            cause.printStackTrace();
            ctx.close();
        }
    }

    private static void helloWorld(
            EventLoopGroup group, Class<? extends ServerChannel> serverClass, Class<? extends Channel> clientClass)
            throws Exception {
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(serverClass)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ChannelPipeline p = ch.pipeline();
                        p.addLast(new HttpServerCodec());
                        p.addLast(new HttpServerExpectContinueHandler());
                        p.addLast(new HelloWorldHandler());
                    }
                })
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
        try {
            int port = ((InetSocketAddress) server.localAddress()).getPort();
            LinkedBlockingQueue<Object> responses = new LinkedBlockingQueue<>();
            Channel client = new Bootstrap()
                    .group(group)
                    .channel(clientClass)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline()
                                    .addLast(
                                            new HttpClientCodec(),
                                            new HttpObjectAggregator(1 << 20),
                                            new SimpleChannelInboundHandler<FullHttpResponse>() {
                                                @Override
                                                protected void channelRead0(
                                                        ChannelHandlerContext ctx, FullHttpResponse r) {
                                                    responses.add(new Object[] {
                                                        r.status(),
                                                        r.content().toString(StandardCharsets.US_ASCII),
                                                        r.headers().get(HttpHeaderNames.CONNECTION)
                                                    });
                                                }

                                                @Override
                                                public void exceptionCaught(
                                                        ChannelHandlerContext ctx, Throwable cause) {
                                                    responses.add(cause);
                                                }
                                            });
                        }
                    })
                    .connect(NettyTestSupport.host(), port)
                    .sync()
                    .channel();
            // keep-alive: three requests on one connection, then one that asks the server to close
            for (int i = 0; i < 4; i++) {
                boolean last = i == 3;
                DefaultFullHttpRequest req =
                        new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/hello/" + i);
                req.headers().set(HttpHeaderNames.HOST, NettyTestSupport.host());
                if (last) req.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                client.writeAndFlush(req).sync();
                Object r = responses.poll(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
                assertNotNull(r, "no response to request " + i);
                if (r instanceof Throwable t) throw new AssertionError("request " + i + " failed", t);
                Object[] parts = (Object[]) r;
                assertEquals(OK, parts[0]);
                assertEquals("Hello World", parts[1]);
                if (last) assertEquals("close", parts[2]);
            }
            // the server closed after the last response: the client sees the end of the stream
            assertEquals(
                    true,
                    client.closeFuture().await(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS),
                    "the server's close did not reach the client");
        } finally {
            server.close().sync();
        }
    }

    @Test
    void helloWorldOverNio() throws Exception {
        EventLoopGroup g = NettyTestSupport.nioGroup(2);
        try {
            helloWorld(g, NioServerSocketChannel.class, NioSocketChannel.class);
        } finally {
            NettyTestSupport.shutdown(g);
        }
    }

    @Test
    void helloWorldOverRdma() throws Exception {
        EventLoopGroup g = new RdmaEventLoopGroup(2);
        try {
            helloWorld(g, RdmaServerChannel.class, RdmaChannel.class);
        } finally {
            NettyTestSupport.shutdown(g);
        }
    }
}
