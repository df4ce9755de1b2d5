/**
 * The corpus OpenAI's measured text rule (shared/providers/tokens.ts, `openaiTextTokens`) is checked against: texts a
 * client writes, as the service receives them. Prompts: every fixture prompt of test/ and bench/, longer prompts as
 * clients write them, and the same kind of request in eighteen other languages. Schemas: the registry's result schemas
 * (stand-ins for a client's inline schema) and the inline schemas the tests send. Scaffolds: the registry's instructions
 * and the tests' inline scaffolds. test/unit/openai-text-tokens.test.ts counts each with o200k_base.
 */
import { buildInstruction, resultJsonSchema } from '../../shared/providers/task-prompt.js';
import { buildTask, registry } from '../../shared/registry/registry.js';

/** The prompts of the tests' and the bench's fixtures (whitespace-only ones left out). */
export const FIXTURE_PROMPTS: readonly string[] = [
  'Receipt',
  'Extract the receipt',
  'Extract',
  'Transcribe',
  'What is this?',
  'What is this document?',
  'Transcribe the document',
  'Summarize',
  'Summarise this document',
  'Summarise the document',
  'Read it',
  'List the sections',
  'Extract the invoice',
  'Extract the fields',
  '  Summarise, keep my spacing  ',
  'Who sold this and for how much?',
  'Transcribe the page',
  'Transcribe the document.',
  'Total?',
  'Text please',
  'Summarise this document in one sentence.',
  'Summarise the document in one paragraph.',
  'Read this document',
  'Read the document',
  'Extract the statement',
  'Extract the receipt details.',
  'Describe this picture',
  'A different question',
];

/** Prompts as clients write them when they say more than a few words. */
export const ENGLISH_PROMPTS: readonly string[] = [
  'Extract every line item of this invoice with its description, quantity, unit price and amount, then the subtotal, ' +
    'the tax and the total due. Use null for anything the invoice does not show.',
  'This is a scanned delivery note from one of our suppliers. Find the delivery note number, the order number it ' +
    'refers to, the delivery date and the list of articles with their article numbers and quantities.',
  'Summarise this contract in three short paragraphs: who the parties are, what each of them must deliver, and the ' +
    'payment terms including penalties for late payment. Quote the clause numbers you rely on.',
  'Read the handwritten form and return the applicant’s full name, date of birth (YYYY-MM-DD), address, phone number ' +
    'and e-mail address. If a box is empty or illegible, return null for it rather than guessing.',
  'Is this a valid receipt for a business expense? Tell me the merchant, the date, the total paid including VAT, the ' +
    'VAT rate and amount, and the payment method (card, cash or other).',
  'Transcribe the table on page 2 as rows of comma-separated values, keeping the column order of the original.',
  'You are checking bank statements for a mortgage application. List every incoming payment over $1,000 with its ' +
    'date, the payer as printed, and the amount; then give the opening and closing balance of the period.',
  'Describe the photo: what the damage to the vehicle is, where on the vehicle it is, and whether the licence plate ' +
    'is readable (if it is, give it).',
  'Extract the shipping label: sender, recipient, tracking number, weight in kg, and the service level (e.g. Express, ' +
    'Standard, Economy).',
  'Give me the key facts of this lab report as key/value pairs: patient ID, sample date, each test name with its ' +
    'result, unit and reference range, and any value flagged as high or low.',
];

/** One request (an invoice's key fields, or a receipt's) in other languages, as a client abroad writes it. */
export const MULTILINGUAL_PROMPTS: Readonly<Record<string, string>> = {
  de:
    'Extrahiere die Rechnungsnummer, das Rechnungsdatum, den Gesamtbetrag und die Mehrwertsteuer aus dieser ' +
    'Rechnung. Beträge ohne Währungssymbol, Datum als JJJJ-MM-TT.',
  fr:
    'Extrais le nom du commerçant, la date d’achat et le montant total TTC de ce ticket de caisse, ainsi que la TVA ' +
    'et le mode de paiement.',
  es: 'Resume este contrato en un párrafo y enumera las fechas de vencimiento y las penalizaciones por pago tardío.',
  it: 'Estrai dalla fattura il numero, la data di emissione, la ragione sociale del fornitore e l’importo totale dovuto.',
  pt: 'Extraia desta nota fiscal o número, a data de emissão, o CNPJ do emitente e o valor total a pagar.',
  nl: 'Haal uit deze factuur het factuurnummer, de factuurdatum, de naam van de leverancier en het totaalbedrag.',
  pl: 'Wyodrębnij z tej faktury numer faktury, datę wystawienia, nazwę sprzedawcy i łączną kwotę do zapłaty.',
  tr: 'Bu faturadan fatura numarasını, tarihini, satıcının adını ve ödenecek toplam tutarı çıkarın.',
  vi: 'Trích xuất số hóa đơn, ngày lập, tên người bán và tổng số tiền phải trả từ hóa đơn này.',
  ru: 'Извлеките из этого счета номер счета, дату, название поставщика и итоговую сумму к оплате.',
  el: 'Εξάγετε από αυτό το τιμολόγιο τον αριθμό τιμολογίου, την ημερομηνία, τον προμηθευτή και το συνολικό ποσό.',
  he: 'חלץ מהחשבונית הזו את מספר החשבונית, התאריך, שם הספק והסכום הכולל לתשלום.',
  ar: 'استخرج من هذه الفاتورة رقم الفاتورة وتاريخها واسم المورد والمبلغ الإجمالي المستحق.',
  hi: 'इस चालान से चालान संख्या, तारीख, विक्रेता का नाम और कुल देय राशि निकालें। तारीख वर्ष-माह-दिन के रूप में लिखें।',
  th: 'ดึงชื่อร้านค้า วันที่ซื้อ และยอดรวมจากใบเสร็จนี้ โดยไม่ต้องใส่สัญลักษณ์สกุลเงิน',
  ja: 'この領収書から店舗名、購入日、合計金額、消費税額を抽出してください。金額は通貨記号なしの数値で。',
  zh: '请从这张发票中提取发票号码、开票日期、销售方名称和价税合计金额。日期格式为年-月-日。',
  ko: '이 영수증에서 상호명, 구매 날짜, 합계 금액 및 부가세를 추출하세요. 금액은 통화 기호 없이 숫자로 적어 주세요.',
};

/** Inline schemas as the tests send them, and as clients write them (with descriptions, or names in their language). */
const INLINE_SCHEMAS = [
  { label: 'Total', expectedFields: [{ name: 'total', type: 'number' as const }] },
  { label: 'Odd names', expectedFields: ['constructor', 'total', { name: 'nested', type: 'object' as const }] },
  {
    label: 'Parking ticket',
    expectedFields: ['plate', { name: 'fine', type: 'number' as const, required: true }],
    promptScaffold: 'Read {fields}. {prompt}',
  },
  {
    label: 'Merchant',
    expectedFields: [
      { name: 'merchant', type: 'string' as const, required: true },
      { name: 'total', type: 'number' as const, required: true },
    ],
    promptScaffold: '{prompt} {fields}',
  },
  {
    label: 'Delivery note',
    expectedFields: [
      { name: 'deliveryNoteNumber', type: 'string' as const, description: 'The number printed as "Lieferschein-Nr."' },
      { name: 'orderNumber', type: 'string' as const, description: 'Our purchase order number it refers to' },
      { name: 'deliveryDate', type: 'date' as const, required: true },
      { name: 'articles', type: 'array' as const, description: 'Each article: number, description, quantity, unit' },
      { name: 'signedByRecipient', type: 'boolean' as const },
    ],
  },
  {
    label: 'Rechnung',
    expectedFields: [
      { name: 'Rechnungs-Nr.', type: 'string' as const, required: true },
      { name: 'Datum', type: 'date' as const },
      { name: 'Gesamtbetrag (brutto)', type: 'number' as const, description: 'Endbetrag inkl. MwSt.' },
    ],
  },
  {
    label: '領収書',
    expectedFields: [
      { name: '日付', type: 'date' as const },
      { name: '合計金額', type: 'number' as const, description: '税込みの合計' },
      { name: '店舗名', type: 'string' as const },
    ],
  },
];

const jsonTask = (schema: (typeof INLINE_SCHEMAS)[number]) =>
  buildTask({ prompt: 'Extract the fields', outputFormat: 'json', schema });

/** JSON schemas as sent: the registry's (as a client would define the same fields) and the inline ones above. */
export function corpusSchemas(): string[] {
  const registryTasks = [...registry.entries()].map(([schemaId, schema]) =>
    buildTask({ prompt: 'Extract', outputFormat: 'json', schemaId, schema }),
  );
  return [...registryTasks, ...INLINE_SCHEMAS.map(jsonTask)].map((task) => JSON.stringify(resultJsonSchema(task)));
}

/** Instructions around a prompt: the registry's scaffolds with their fields, and the inline schemas' (stand-ins). */
export function corpusScaffolds(): string[] {
  const registryTasks = [...registry.entries()].map(([schemaId, schema]) =>
    buildTask({ prompt: '', outputFormat: 'json', schemaId, schema }),
  );
  return [...registryTasks, ...INLINE_SCHEMAS.map(jsonTask)].map((task) => buildInstruction({ ...task, prompt: '' }));
}

/** The whole corpus, labelled. */
export function textCorpus(): { label: string; text: string }[] {
  return [
    ...FIXTURE_PROMPTS.map((text, i) => ({ label: `fixture prompt ${i + 1}`, text })),
    ...ENGLISH_PROMPTS.map((text, i) => ({ label: `English prompt ${i + 1}`, text })),
    ...Object.entries(MULTILINGUAL_PROMPTS).map(([language, text]) => ({ label: `prompt (${language})`, text })),
    ...corpusSchemas().map((text, i) => ({ label: `schema ${i + 1}`, text })),
    ...corpusScaffolds().map((text, i) => ({ label: `scaffold ${i + 1}`, text })),
  ];
}
