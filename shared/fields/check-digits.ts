/**
 * Check digits of identifiers a result may hold: IBAN (ISO 13616, mod 97) and the VAT numbers whose check is cheap
 * and public (Germany: ISO 7064 MOD 11,10; United Kingdom: the weighted mod 97 / 97-55 rule). Pure.
 * Not to undo: a VAT number of any other country is never reported as failing; we only know it is not checked.
 */

/** Letters and digits only, upper case (`de89 3704 0044` → `DE8937040044`). */
function compactId(value: string): string {
  // No identifier is longer; a long text is not one (and is not scanned).
  if (value.length > 80) return '';
  return value.replace(/[\s.\-/]/g, '').toUpperCase();
}

/** The shape of an IBAN: country, two check digits, 11 to 30 letters or digits. */
export function looksLikeIban(value: string): boolean {
  return /^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compactId(value));
}

/** Whether an IBAN's check digits hold (mod 97 of the rearranged number is 1). */
export function ibanValid(value: string): boolean {
  const iban = compactId(value);
  if (!looksLikeIban(iban)) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const digits = /\d/.test(ch) ? ch : String(ch.charCodeAt(0) - 55);
    for (const d of digits) remainder = (remainder * 10 + Number(d)) % 97;
  }
  return remainder === 1;
}

/** True only when the number is German or British and its check digits are wrong. */
export function vatCheckDigitsFail(value: string): boolean {
  const id = compactId(value);
  const de = /^DE(\d{9})$/.exec(id);
  if (de?.[1] !== undefined) return !germanVatValid(de[1]);
  const gb = /^GB(\d{9})(?:\d{3})?$/.exec(id);
  if (gb?.[1] !== undefined) return !britishVatValid(gb[1]);
  return false;
}

/** ISO 7064 MOD 11,10 over the first 8 digits gives the 9th. */
function germanVatValid(digits: string): boolean {
  let product = 10;
  for (const d of digits.slice(0, 8)) {
    let sum = (Number(d) + product) % 10;
    if (sum === 0) sum = 10;
    product = (2 * sum) % 11;
  }
  const check = (11 - product) % 10;
  return check === Number(digits[8]);
}

/** Weights 8…2 over the first 7 digits plus the last two: a multiple of 97, or of 97 after adding 55 (post-2010). */
function britishVatValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < 7; i++) sum += Number(digits[i]) * (8 - i);
  const total = sum + Number(digits.slice(7, 9));
  return total % 97 === 0 || (total + 55) % 97 === 0;
}
