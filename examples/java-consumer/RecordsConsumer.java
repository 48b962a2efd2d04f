// Reads dualplane's `records` topic from Java: the Kafka client and Apache Avro's own single-object
// decoder, nothing of dualplane's. Prints one JSON object per record on standard output.
//
//   mvn -q dependency:copy-dependencies -DoutputDirectory=target/lib
//   java -cp 'target/lib/*' RecordsConsumer.java --bootstrap 127.0.0.1:9092 \
//       --topic records --schemas-topic _dualplane.schemas [--max N] [--idle-ms 5000] [--job ID]
//
// Writer schemas come from the compacted schema topic (key: the fingerprint as 16 hex digits, value:
// JSON {"name", "version", "fingerprint", "schema"}). The fingerprint is taken from that key, not
// recomputed: the spec's canonical form and some libraries' differ on logical types.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.avro.Conversions;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.SchemaStore;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class RecordsConsumer {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parse(argv);
    String bootstrap = args.getOrDefault("--bootstrap", "127.0.0.1:9092");
    String topic = args.getOrDefault("--topic", "records");
    String schemasTopic = args.getOrDefault("--schemas-topic", "_dualplane.schemas");
    long max = Long.parseLong(args.getOrDefault("--max", "-1"));
    long idleMs = Long.parseLong(args.getOrDefault("--idle-ms", "5000"));
    String job = args.get("--job");

    Map<Long, Schema> writers = loadSchemas(bootstrap, schemasTopic, idleMs);
    SchemaStore store = writers::get;
    long printed = 0;
    long idleSince = System.currentTimeMillis();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config(bootstrap))) {
      consumer.assign(partitions(consumer, topic));
      consumer.seekToBeginning(consumer.assignment());
      while (max < 0 || printed < max) {
        var batch = consumer.poll(Duration.ofMillis(200));
        if (batch.isEmpty()) {
          if (System.currentTimeMillis() - idleSince > idleMs) break;
          continue;
        }
        idleSince = System.currentTimeMillis();
        for (ConsumerRecord<byte[], byte[]> message : batch) {
          GenericRecord record = decode(store, writers, message.value());
          if (job != null && !job.equals(String.valueOf(record.get("job_id")))) continue;
          System.out.println(JSON.writeValueAsString(summary(record)));
          printed++;
          if (max >= 0 && printed >= max) break;
        }
      }
    }
    System.err.println("read " + printed + " record(s) from " + topic);
  }

  /** Every writer schema on the schema topic, by the fingerprint its key names. */
  static Map<Long, Schema> loadSchemas(String bootstrap, String topic, long idleMs) throws Exception {
    Map<Long, Schema> writers = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config(bootstrap))) {
      List<TopicPartition> parts = partitions(consumer, topic);
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
      long deadline = System.currentTimeMillis() + Math.max(idleMs, 10_000);
      while (!caughtUp(consumer, ends) && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> message : consumer.poll(Duration.ofMillis(200))) {
          if (message.key() == null || message.value() == null) continue;
          long fingerprint = Long.parseUnsignedLong(new String(message.key(), StandardCharsets.UTF_8), 16);
          JsonNode entry = JSON.readTree(message.value());
          writers.put(fingerprint, new Schema.Parser().parse(entry.get("schema").toString()));
        }
      }
    }
    if (writers.isEmpty()) throw new IllegalStateException("no schemas on " + topic + ": is the topic name right?");
    return writers;
  }

  static GenericRecord decode(SchemaStore store, Map<Long, Schema> writers, byte[] value) throws Exception {
    // The wire's fingerprint is little-endian after the C3 01 marker (Avro single-object encoding).
    long fingerprint = ByteBuffer.wrap(value, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    Schema writer = writers.get(fingerprint);
    if (writer == null) throw new IllegalStateException("unknown writer fingerprint " + Long.toHexString(fingerprint));
    // Read each record with its own writer schema as the reader: a real consumer would pass its own.
    BinaryMessageDecoder<GenericRecord> decoder = new BinaryMessageDecoder<>(GenericData.get(), writer, store);
    return decoder.decode(value);
  }

  /** The fields downstream users read most: where, when, which job, and the product. */
  static ObjectNode summary(GenericRecord record) {
    ObjectNode out = JSON.createObjectNode();
    out.put("url", String.valueOf(record.get("url")));
    out.put("job_id", String.valueOf(record.get("job_id")));
    out.put("schema_version", (Integer) record.get("schema_version"));
    out.put("fetched_at", (Long) record.get("fetched_at"));
    Object title = record.get("title");
    out.put("title", title == null ? null : title.toString());
    Object product = record.get("product");
    if (product instanceof GenericRecord p) {
      ObjectNode node = out.putObject("product");
      for (String field : new String[] {"name", "currency", "availability", "sku"}) {
        Object v = p.get(field);
        node.put(field, v == null ? null : v.toString());
      }
      node.put("price", price(p));
    } else {
      out.putNull("product");
    }
    return out;
  }

  static String price(GenericRecord product) {
    Object raw = product.get("price");
    if (raw == null) return null;
    Schema bytes = product.getSchema().getField("price").schema().getTypes().get(1);
    LogicalTypes.Decimal decimal = (LogicalTypes.Decimal) bytes.getLogicalType();
    BigDecimal value = new Conversions.DecimalConversion().fromBytes((ByteBuffer) raw, bytes, decimal);
    return value.toPlainString();
  }

  static Properties config(String bootstrap) {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.put(ConsumerConfig.GROUP_ID_CONFIG, "java-example-" + UUID.randomUUID());
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    // Only what the extractor's transactions committed: an aborted attempt's records are never read.
    config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return config;
  }

  static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> consumer, String topic) {
    List<TopicPartition> parts = new ArrayList<>();
    List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
    if (infos == null || infos.isEmpty()) throw new IllegalStateException("topic " + topic + " does not exist");
    for (PartitionInfo info : infos) parts.add(new TopicPartition(topic, info.partition()));
    return parts;
  }

  static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
    for (var end : ends.entrySet()) {
      if (consumer.position(end.getKey()) < end.getValue()) return false;
    }
    return true;
  }

  static Map<String, String> parse(String[] argv) {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("expected --name value, got " + argv[i]);
      args.put(argv[i], argv[i + 1]);
    }
    return args;
  }
}
