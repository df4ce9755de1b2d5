// Generated from shared/registry/*.json by `npm run gen:sdk-schemas`: do not edit.
/**
 * The result of a completed json run for each built-in schema of the registry: every field of the schema is present,
 * as a value of its type or null (not found in the document, or not readable as its type; required fields too).
 */
import type { JsonValue } from './types.js';

/** `schemaId: 'receipt'`: Receipt. */
export type ReceiptResult = {
  /** Store or merchant name; required */
  merchant: string | null;
  /** Purchase date; required */
  date: string | null;
  /** Amount before tax */
  subtotal: number | null;
  /** Tax amount */
  tax: number | null;
  /** Total amount paid; required */
  total: number | null;
  /** ISO 4217 currency code */
  currency: string | null;
};

/** `schemaId: 'invoice'`: Invoice. */
export type InvoiceResult = {
  /** Invoice number or id; required */
  invoiceNumber: string | null;
  /** Date of issue; required */
  invoiceDate: string | null;
  /** Payment due date */
  dueDate: string | null;
  /** Issuing company; required */
  vendor: string | null;
  /** Total amount due; required */
  totalDue: number | null;
  /** ISO 4217 currency code */
  currency: string | null;
};

/** `schemaId: 'id_document'`: Identity document. */
export type IdDocumentResult = {
  /** Passport, driver licence, ID card */
  documentType: string | null;
  /** required */
  documentNumber: string | null;
  /** required */
  fullName: string | null;
  dateOfBirth: string | null;
  expiryDate: string | null;
  issuingCountry: string | null;
};

/** `schemaId: 'business_card'`: Business card. */
export type BusinessCardResult = {
  /** required */
  name: string | null;
  title: string | null;
  company: string | null;
  email: string | null;
  phone: string | null;
  website: string | null;
};

/** `schemaId: 'bank_statement'`: Bank statement. */
export type BankStatementResult = {
  bankName: string | null;
  accountHolder: string | null;
  accountNumber: string | null;
  statementPeriodStart: string | null;
  statementPeriodEnd: string | null;
  openingBalance: number | null;
  closingBalance: number | null;
  /** List of {date, description, amount} */
  transactions: JsonValue[] | null;
};

/** Each built-in schema id and the result type its runs complete with. */
export type RegistryResults = {
  receipt: ReceiptResult;
  invoice: InvoiceResult;
  id_document: IdDocumentResult;
  business_card: BusinessCardResult;
  bank_statement: BankStatementResult;
};

/** The ids of the built-in schemas (`GET /v1/schemas`). */
export type RegistrySchemaId = keyof RegistryResults;
