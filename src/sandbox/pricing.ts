/**
 * The sandbox's routing and price table: per region, the upstream that carries text messages and
 * its price per billed message, plus a voice route for the home region. Prices are invented but
 * of a plausible order (UZ: a premium range, for the pumping demo); the voice price matches the spec's example (0.050000). A region listed
 * with `upstream: null` (AU) — or absent from the table — has no route and answers 101301.
 */
import { parseMoney } from './money.ts';

export interface Route {
  readonly upstream: string;
  readonly priceMicros: bigint;
}

export interface RegionRoutes {
  readonly text: Route | null;
  readonly voice?: Route;
}

function route(upstream: string, price: string): Route {
  const priceMicros = parseMoney(price);
  if (priceMicros === undefined) throw new Error(`bad price literal ${price}`);
  return { upstream, priceMicros };
}

export const PRICE_TABLE: Readonly<Record<string, RegionRoutes>> = {
  CN: { text: route('cn.cmpp.standard', '0.045000'), voice: route('monyun.standard', '0.050000') },
  HK: { text: route('apac.direct', '0.350000') },
  TW: { text: route('apac.direct', '0.420000') },
  SG: { text: route('apac.direct', '0.250000') },
  JP: { text: route('apac.premium', '0.550000') },
  US: { text: route('na.tollfree', '0.080000') },
  GB: { text: route('eu.premium', '0.300000') },
  DE: { text: route('eu.premium', '0.600000') },
  FR: { text: route('eu.standard', '0.450000') },
  AU: { text: null },
  // A premium-rate range of the kind SMS pumping targets (bots request codes to numbers whose
  // termination fees the fraudster shares): priced high, so the demo shows a blocked burst
  // (`produce --burst`, the velocity limits) and what a spend cap saves.
  UZ: { text: route('intl.premium-range', '1.250000') },
};

export function textRoute(regionCode: string): Route | undefined {
  return PRICE_TABLE[regionCode]?.text ?? undefined;
}

/** A sandbox's text routes that differ from PRICE_TABLE, by region: an upstream and its price, or null for none (101301). */
export type TextRouteOverrides = Readonly<Record<string, { readonly upstream: string; readonly price: string } | null>>;

/**
 * The text route lookup of a sandbox whose account has routes of its own (a second account of the
 * service, e.g. one with an AU upstream): its overrides first, then PRICE_TABLE.
 */
export function textRoutesWith(overrides: TextRouteOverrides = {}): (regionCode: string) => Route | undefined {
  const own = new Map(Object.entries(overrides).map(([region, given]) => [region, given === null ? null : route(given.upstream, given.price)] as const));
  return (regionCode) => {
    const given = own.get(regionCode);
    return given === undefined ? textRoute(regionCode) : (given ?? undefined);
  };
}

export function voiceRoute(regionCode: string): Route | undefined {
  return PRICE_TABLE[regionCode]?.voice;
}
