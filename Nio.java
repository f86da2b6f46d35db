import java.net.*; import java.nio.channels.*;
public class Nio { public static void main(String[] a) throws Exception {
  try (SocketChannel c = SocketChannel.open(new InetSocketAddress(a[0], Integer.parseInt(a[1])))) { System.out.println("ok"); }
  catch (Exception e) { System.out.println("fail " + e.getClass().getSimpleName()); }
}}
