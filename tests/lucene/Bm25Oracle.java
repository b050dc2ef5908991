// Real-Lucene oracle for ragframe's BM25 retrieval (SPEC 6): index every chunk with
// StandardAnalyzer without stop words and BM25Similarity(k1, b), one document per chunk
// in row order (one segment, so a document's id is its chunk row), then search each
// query as Lucene's classic QueryParser parses it (default operator OR; the text
// escaped, so that its characters and the words AND, OR, NOT are plain text). Test
// tooling only; driven by tests/lucene_bm25.py.
//
// Wire format (stdin and stdout, big-endian; a string is an int32 count of UTF-16 units,
// then the units):
//   search mode (default), in:  int32 n, n chunk texts, int32 m, m query texts
//                          out: per query: int32 hits, then per hit: int32 doc (chunk
//                               row), int32 score (the float's bits); then the query as
//                               Lucene rewrote it (a string, for the report)
//   --norms mode,          in:  int32 n, n lengths (int32)
//                          out: n bytes (SmallFloat.intToByte4), then for each byte
//                               value 0..255 an int32 (SmallFloat.byte4ToInt)
// Options: --k1 X (1.2), --b X (0.75), --top N (10).

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.queryparser.classic.ParseException;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.SmallFloat;

public final class Bm25Oracle {
  static final String FIELD = "text";
  static final Pattern OPERATOR = Pattern.compile("\\b(AND|OR|NOT)\\b");

  static String readString(DataInputStream in) throws IOException {
    int n = in.readInt();
    char[] chars = new char[n];
    for (int i = 0; i < n; i++) {
      chars[i] = in.readChar();
    }
    return new String(chars);
  }

  static void writeString(DataOutputStream out, String s) throws IOException {
    out.writeInt(s.length());
    out.writeChars(s);
  }

  /** The query text as plain words for the classic parser: its syntax characters
   * escaped (QueryParser.escape), and the operator words too. */
  static String plain(String text) {
    String escaped = QueryParser.escape(text);
    return OPERATOR.matcher(escaped).replaceAll(m -> Matcher.quoteReplacement("\\" + m.group()));
  }

  static boolean hasTokens(Analyzer analyzer, String text) throws IOException {
    try (TokenStream ts = analyzer.tokenStream(FIELD, text)) {
      ts.reset();
      boolean any = ts.incrementToken();
      ts.end();
      return any;
    }
  }

  public static void main(String[] args) throws Exception {
    float k1 = 1.2f;
    float b = 0.75f;
    int top = 10;
    boolean norms = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--k1": k1 = Float.parseFloat(args[++i]); break;
        case "--b": b = Float.parseFloat(args[++i]); break;
        case "--top": top = Integer.parseInt(args[++i]); break;
        case "--norms": norms = true; break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
    if (norms) {
      int n = in.readInt();
      for (int i = 0; i < n; i++) {
        out.writeByte(SmallFloat.intToByte4(in.readInt()));
      }
      for (int i = 0; i < 256; i++) {
        out.writeInt(SmallFloat.byte4ToInt((byte) i));
      }
      out.flush();
      return;
    }
    BooleanQuery.setMaxClauseCount(1 << 20);
    Analyzer analyzer = new StandardAnalyzer(CharArraySet.EMPTY_SET);
    BM25Similarity similarity = new BM25Similarity(k1, b);
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    IndexWriterConfig config = new IndexWriterConfig(analyzer).setSimilarity(similarity);
    config.setRAMBufferSizeMB(256).setMergePolicy(new LogDocMergePolicy());
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      int n = in.readInt();
      for (int i = 0; i < n; i++) {
        Document doc = new Document();
        doc.add(new TextField(FIELD, readString(in), Field.Store.NO));
        writer.addDocument(doc);
      }
      writer.forceMerge(1); // LogDocMergePolicy keeps the documents in order
    }
    DirectoryReader reader = DirectoryReader.open(dir);
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setSimilarity(similarity);
    QueryParser parser = new QueryParser(FIELD, analyzer);
    int m = in.readInt();
    for (int q = 0; q < m; q++) {
      String text = readString(in);
      if (!hasTokens(analyzer, text)) {
        out.writeInt(0);
        writeString(out, "");
        continue;
      }
      Query query;
      try {
        query = parser.parse(plain(text));
      } catch (ParseException e) {
        throw new IOException("cannot parse query " + q + ": " + e.getMessage(), e);
      }
      TopDocs hits = searcher.search(query, top);
      out.writeInt(hits.scoreDocs.length);
      for (ScoreDoc hit : hits.scoreDocs) {
        out.writeInt(hit.doc);
        out.writeInt(Float.floatToRawIntBits(hit.score));
      }
      writeString(out, searcher.rewrite(query).toString(FIELD));
    }
    out.flush();
  }
}
