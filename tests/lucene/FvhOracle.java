// Real-Lucene oracle for ragframe's highlighter (SPEC 2.1): what Fess gets from
// OpenSearch's FastVectorHighlighter, one (query, content) pair at a time, many pairs per
// JVM start. Test tooling only; driven by tests/lucene_oracle.py.
//
// Wire format (stdin and stdout, big-endian; a string is an int32 count of UTF-16 units,
// then the units):
//   highlight mode (default), per pair in:  query, content
//                            per pair out: int32 n (-1: error, then one string message),
//                                          n times: int32 start, int32 end (UTF-16 units
//                                          into content), float64 score, string text
//   --tokens mode,           per text in:  text
//                            per text out: int32 n, n times: int32 start, int32 end,
//                                          string type, string term (lower-cased)
// Options: --fragsize N (1000), --frags N (5), --phrase-limit N (256).

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.OffsetAttribute;
import org.apache.lucene.analysis.tokenattributes.TypeAttribute;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.highlight.DefaultEncoder;
import org.apache.lucene.search.highlight.Encoder;
import org.apache.lucene.search.vectorhighlight.BoundaryScanner;
import org.apache.lucene.search.vectorhighlight.FastVectorHighlighter;
import org.apache.lucene.search.vectorhighlight.FieldFragList.WeightedFragInfo;
import org.apache.lucene.search.vectorhighlight.FieldQuery;
import org.apache.lucene.search.vectorhighlight.ScoreOrderFragmentsBuilder;
import org.apache.lucene.search.vectorhighlight.SimpleBoundaryScanner;
import org.apache.lucene.search.vectorhighlight.SimpleFragListBuilder;
import org.apache.lucene.store.ByteBuffersDirectory;

public final class FvhOracle {
  static final String FIELD = "content";
  static final String[] NO_TAG = new String[] {""};

  /** Lucene's own ScoreOrderFragmentsBuilder that also records each fragment's offsets. */
  static final class RecordingBuilder extends ScoreOrderFragmentsBuilder {
    final List<int[]> offsets = new ArrayList<>();
    final List<Double> scores = new ArrayList<>();

    RecordingBuilder(BoundaryScanner scanner) {
      super(NO_TAG, NO_TAG, scanner);
    }

    @Override
    protected String makeFragment(
        StringBuilder buffer,
        int[] index,
        Field[] values,
        WeightedFragInfo fragInfo,
        String[] preTags,
        String[] postTags,
        Encoder encoder) {
      scores.add((double) fragInfo.getTotalBoost());
      return super.makeFragment(buffer, index, values, fragInfo, preTags, postTags, encoder);
    }

    @Override
    protected String getFragmentSourceMSO(
        StringBuilder buffer,
        int[] index,
        Field[] values,
        int startOffset,
        int endOffset,
        int[] modifiedStartOffset) {
      String src =
          super.getFragmentSourceMSO(
              buffer, index, values, startOffset, endOffset, modifiedStartOffset);
      offsets.add(new int[] {modifiedStartOffset[0], modifiedStartOffset[0] + src.length()});
      return src;
    }
  }

  static final FieldType TYPE = new FieldType(TextField.TYPE_STORED);

  static {
    TYPE.setStoreTermVectors(true);
    TYPE.setStoreTermVectorPositions(true);
    TYPE.setStoreTermVectorOffsets(true);
    TYPE.freeze();
  }

  // Strings travel as UTF-16 code units (int32 count, then the units) so that a fragment
  // edge inside a surrogate pair, which Lucene can produce, comes back as it is.
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

  static Set<String> terms(Analyzer analyzer, String text) throws IOException {
    Set<String> out = new LinkedHashSet<>();
    try (TokenStream ts = analyzer.tokenStream(FIELD, text)) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) {
        out.add(term.toString());
      }
      ts.end();
    }
    return out;
  }

  static void tokens(Analyzer analyzer, String text, DataOutputStream out) throws IOException {
    List<Object[]> rows = new ArrayList<>();
    try (TokenStream ts = analyzer.tokenStream(FIELD, text)) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      OffsetAttribute off = ts.addAttribute(OffsetAttribute.class);
      TypeAttribute type = ts.addAttribute(TypeAttribute.class);
      ts.reset();
      while (ts.incrementToken()) {
        rows.add(
            new Object[] {off.startOffset(), off.endOffset(), type.type(), term.toString()});
      }
      ts.end();
    }
    out.writeInt(rows.size());
    for (Object[] r : rows) {
      out.writeInt((Integer) r[0]);
      out.writeInt((Integer) r[1]);
      writeString(out, (String) r[2]);
      writeString(out, (String) r[3]);
    }
  }

  static void highlight(
      Analyzer analyzer,
      IndexWriter writer,
      String query,
      String content,
      int fragSize,
      int frags,
      int phraseLimit,
      DataOutputStream out)
      throws IOException {
    BooleanQuery.Builder bq = new BooleanQuery.Builder();
    for (String t : terms(analyzer, query)) {
      bq.add(new TermQuery(new Term(FIELD, t)), BooleanClause.Occur.SHOULD);
    }
    // One document per index: the writer is reused, emptied before each pair.
    writer.deleteAll();
    Document doc = new Document();
    doc.add(new Field(FIELD, content, TYPE));
    writer.addDocument(doc);
    String[] texts;
    RecordingBuilder builder =
        new RecordingBuilder(
            new SimpleBoundaryScanner(20, new Character[] {'\t', '\n', '\u0013', ' '}));
    try (DirectoryReader reader = DirectoryReader.open(writer)) {
      if (reader.maxDoc() != 1 || reader.numDocs() != 1) {
        throw new IllegalStateException("the index does not hold exactly this pair's document");
      }
      FastVectorHighlighter fvh =
          new FastVectorHighlighter(true, true, new SimpleFragListBuilder(), builder);
      fvh.setPhraseLimit(phraseLimit);
      FieldQuery fq = fvh.getFieldQuery(bq.build(), reader);
      texts =
          fvh.getBestFragments(
              fq,
              reader,
              0,
              FIELD,
              fragSize,
              frags,
              new SimpleFragListBuilder(),
              builder,
              NO_TAG,
              NO_TAG,
              new DefaultEncoder());
    }
    if (texts == null) {
      texts = new String[0];
    }
    if (builder.offsets.size() != texts.length || builder.scores.size() != texts.length) {
      throw new IllegalStateException("recorded offsets do not line up with the fragments");
    }
    out.writeInt(texts.length);
    for (int i = 0; i < texts.length; i++) {
      int[] o = builder.offsets.get(i);
      if (!content.substring(o[0], o[1]).equals(texts[i])) {
        throw new IllegalStateException("fragment " + i + " is not content[start:end]");
      }
      out.writeInt(o[0]);
      out.writeInt(o[1]);
      out.writeDouble(builder.scores.get(i));
      writeString(out, texts[i]);
    }
  }

  public static void main(String[] args) throws IOException {
    boolean tokenMode = false;
    int fragSize = 1000;
    int frags = 5;
    int phraseLimit = 256;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--tokens":
          tokenMode = true;
          break;
        case "--fragsize":
          fragSize = Integer.parseInt(args[++i]);
          break;
        case "--frags":
          frags = Integer.parseInt(args[++i]);
          break;
        case "--phrase-limit":
          phraseLimit = Integer.parseInt(args[++i]);
          break;
        default:
          throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    Analyzer analyzer = new StandardAnalyzer(CharArraySet.EMPTY_SET);
    IndexWriter writer =
        new IndexWriter(new ByteBuffersDirectory(), new IndexWriterConfig(analyzer));
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
    while (true) {
      String first;
      try {
        first = readString(in);
      } catch (EOFException end) {
        break;
      }
      if (tokenMode) {
        tokens(analyzer, first, out);
        continue;
      }
      String content = readString(in);
      try {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream one = new DataOutputStream(bytes);
        highlight(analyzer, writer, first, content, fragSize, frags, phraseLimit, one);
        one.flush();
        bytes.writeTo(out);
      } catch (RuntimeException e) {
        out.writeInt(-1);
        writeString(out, e.toString());
      }
    }
    out.flush();
    writer.close();
  }
}
